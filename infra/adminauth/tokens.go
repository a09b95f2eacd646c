// Package adminauth authenticates requests to a node's admin HTTP listener
// (admin_listen): bearer tokens from a file that is reloaded when it
// changes, each with a role (read or admin), and client certificates that
// the listener's TLS configuration verified (mTLS); a request that may
// change something needs the admin role. It stands alone (standard library only); broker wires it
// in front of the admin mux.
package adminauth

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// ErrTokensFile: the tokens file cannot be read or holds a token too short.
var ErrTokensFile = errors.New("adminauth: invalid tokens file")

// MinTokenLength is the shortest token a file may hold: a bearer token is
// a secret, not a password someone types.
const MinTokenLength = 16

// statEvery bounds how often Valid looks at the file for a change.
const statEvery = time.Second

// Role is what a token may do on the admin listener.
type Role int

const (
	// RoleNone: no valid credentials.
	RoleNone Role = iota
	// RoleRead may read (GET, HEAD, OPTIONS): metrics, status, the
	// console's pages.
	RoleRead
	// RoleAdmin may also change something (any other method).
	RoleAdmin
)

// String is the role's name in a tokens file: "read" or "admin".
func (r Role) String() string {
	switch r {
	case RoleRead:
		return "read"
	case RoleAdmin:
		return "admin"
	}
	return "none"
}

// parseRole reads a tokens file's role word.
func parseRole(s string) (Role, bool) {
	switch strings.ToLower(s) {
	case "read", "read-only", "readonly":
		return RoleRead, true
	case "admin":
		return RoleAdmin, true
	}
	return RoleNone, false
}

// Tokens is the set of bearer tokens in a file: one token per line,
// optionally followed by white space and its role, "read" (or
// "read-only") or "admin"; a token without a role is an admin one (the
// format before roles existed). Blank lines and lines starting with # are
// ignored, and spaces around a token are trimmed. Valid reloads the file when its size or modification time
// changed (looked at once a second at most); a change that does not load
// keeps the previous tokens and logs one warning. Safe for concurrent use.
type Tokens struct {
	path string
	log  *slog.Logger
	now  func() time.Time

	mu struct {
		sync.Mutex
		hashes   []tokenHash // SHA-256 of each token, with its role
		stamp    fileStamp   // of the file the hashes came from
		badStamp fileStamp   // of the last file that did not load (logged once)
		checked  time.Time   // when the file was last looked at
	}
}

// tokenHash is a token's SHA-256 and its role.
type tokenHash struct {
	sum  [sha256.Size]byte
	role Role
}

type fileStamp struct {
	size int64
	mod  time.Time
}

// LoadTokens reads path once and returns its tokens, or why they cannot
// be used. A nil log discards logs.
func LoadTokens(path string, log *slog.Logger) (*Tokens, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Tokens{path: path, log: log, now: time.Now}
	st, hashes, err := t.load()
	if err != nil {
		return nil, err
	}
	t.mu.stamp, t.mu.hashes, t.mu.checked = st, hashes, t.now()
	if len(hashes) == 0 {
		log.Warn("admin: the tokens file holds no token: every request needing one is refused", "file", path)
	}
	return t, nil
}

// Valid reports whether token is one of the file's, whatever its role.
func (t *Tokens) Valid(token string) bool { return t.Role(token) != RoleNone }

// Role returns token's role, RoleNone when it is not one of the file's. It
// compares a hash of token with the hash of every token in constant time
// each, and looks at every one, so that neither the answer's time nor an
// early exit tells how much of a token matched. A token listed twice has
// the larger of its roles.
func (t *Tokens) Role(token string) Role {
	if token == "" {
		return RoleNone
	}
	h := sha256.Sum256([]byte(token))
	role := RoleNone
	for _, want := range t.current() {
		eq := subtle.ConstantTimeCompare(h[:], want.sum[:])
		role = max(role, Role(subtle.ConstantTimeSelect(eq, int(want.role), int(RoleNone))))
	}
	return role
}

// current returns the tokens' hashes, reloading the file when it changed.
func (t *Tokens) current() []tokenHash {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if now.Sub(t.mu.checked) < statEvery {
		return t.mu.hashes
	}
	t.mu.checked = now
	fi, err := os.Stat(t.path)
	if err != nil {
		if t.mu.badStamp != (fileStamp{}) {
			return t.mu.hashes
		}
		t.mu.badStamp = fileStamp{size: -1}
		t.log.Warn("admin: the tokens file cannot be read; keeping the previous tokens", "file", t.path, "err", err)
		return t.mu.hashes
	}
	st := fileStamp{size: fi.Size(), mod: fi.ModTime()}
	if st == t.mu.stamp || st == t.mu.badStamp {
		return t.mu.hashes
	}
	st, hashes, err := t.load()
	if err != nil {
		t.mu.badStamp = st
		t.log.Warn("admin: the tokens file changed but does not load; keeping the previous tokens", "file", t.path, "err", err)
		return t.mu.hashes
	}
	t.mu.stamp, t.mu.hashes, t.mu.badStamp = st, hashes, fileStamp{}
	t.log.Info("admin: tokens file reloaded", "file", t.path, "tokens", len(hashes))
	return hashes
}

// load reads the file: its stamp (taken before the read, so a change
// during the read is seen at the next look) and the hashes of its tokens.
// Errors never quote the file's contents.
func (t *Tokens) load() (fileStamp, []tokenHash, error) {
	fi, err := os.Stat(t.path)
	if err != nil {
		return fileStamp{}, nil, fmt.Errorf("%w: %v", ErrTokensFile, err)
	}
	st := fileStamp{size: fi.Size(), mod: fi.ModTime()}
	data, err := os.ReadFile(t.path)
	if err != nil {
		return st, nil, fmt.Errorf("%w: %v", ErrTokensFile, err)
	}
	var hashes []tokenHash
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		tok, role := fields[0], RoleAdmin
		switch len(fields) {
		case 1:
		case 2:
			var ok bool
			if role, ok = parseRole(fields[1]); !ok {
				return st, nil, fmt.Errorf("%w: %s line %d: the role after the token is not read or admin", ErrTokensFile, t.path, line)
			}
		default:
			return st, nil, fmt.Errorf("%w: %s line %d: want a token and at most a role (read or admin)", ErrTokensFile, t.path, line)
		}
		if len(tok) < MinTokenLength {
			return st, nil, fmt.Errorf("%w: %s line %d: a token shorter than %d characters", ErrTokensFile, t.path, line, MinTokenLength)
		}
		hashes = append(hashes, tokenHash{sum: sha256.Sum256([]byte(tok)), role: role})
	}
	if err := sc.Err(); err != nil {
		return st, nil, fmt.Errorf("%w: %v", ErrTokensFile, err)
	}
	return st, hashes, nil
}
