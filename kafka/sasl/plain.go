package sasl

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/shale-io/shale/kafka"
)

// Plain is the PLAIN mechanism name.
const Plain = "PLAIN"

// PlainUsers are the users PLAIN accepts, name -> password. It must not be
// modified once passed to PlainMechanism.
type PlainUsers map[string]string

// LoadPlainUsers reads a users file: one user:password per line (the
// password is the rest of the line after the first colon), blank lines and
// lines starting with # ignored.
func LoadPlainUsers(path string) (PlainUsers, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sasl: PLAIN users: %w", err)
	}
	users := PlainUsers{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, pass, ok := strings.Cut(line, ":")
		if !ok || user == "" || pass == "" {
			// The line number only: the line may hold a password.
			return nil, fmt.Errorf("sasl: PLAIN users %s:%d: want user:password", path, n)
		}
		users[user] = pass
	}
	return users, sc.Err()
}

// PlainMechanism returns PLAIN (RFC 4616) checking against users. Use it on
// TLS listeners (SASL_SSL) only: the password crosses the wire as it is.
func PlainMechanism(users PlainUsers) kafka.SASLMechanism {
	return plainMechanism{users: func() PlainUsers { return users }}
}

// PlainFileMechanism is PlainMechanism against a users file, read again
// when it changes (see PlainUsersFile).
func PlainFileMechanism(f *PlainUsersFile) kafka.SASLMechanism { return plainMechanism{users: f.Users} }

type plainMechanism struct{ users func() PlainUsers }

func (plainMechanism) Name() string { return Plain }

func (m plainMechanism) Start() kafka.SASLExchange { return &plainExchange{users: m.users()} }

// PlainUsersFile is a users file (LoadPlainUsers' format) that is read
// again when its size or modification time changes, checked at each login
// as the TLS files are; a change that does not load keeps the previous
// users and logs once. Replace the file with a rename. Safe for concurrent
// use.
type PlainUsersFile struct {
	path string
	log  *slog.Logger

	mu struct {
		sync.Mutex
		users PlainUsers
		stamp fileStamp // of the file users was read from
		bad   fileStamp // of the file whose last read failed, logged once
	}
}

// OpenPlainUsersFile reads path once: a file that does not load is an
// error. A nil log discards logs.
func OpenPlainUsersFile(path string, log *slog.Logger) (*PlainUsersFile, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &PlainUsersFile{path: path, log: log}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("sasl: PLAIN users: %w", err)
	}
	users, err := LoadPlainUsers(path)
	if err != nil {
		return nil, err
	}
	f.mu.users, f.mu.stamp = users, fileStamp{size: fi.Size(), mod: fi.ModTime()}
	return f, nil
}

// Users returns the users of the file as it is now. The caller must not
// modify the map.
func (f *PlainUsersFile) Users() PlainUsers {
	fi, err := os.Stat(f.path)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		return f.mu.users // being replaced: keep the users
	}
	st := fileStamp{size: fi.Size(), mod: fi.ModTime()}
	if st.equal(f.mu.stamp) || st.equal(f.mu.bad) {
		return f.mu.users
	}
	users, err := LoadPlainUsers(f.path)
	if err != nil {
		if !st.equal(f.mu.bad) {
			f.log.Warn("sasl: PLAIN users file changed but does not load; keeping the previous users", "file", f.path, "err", err)
		}
		f.mu.bad = st
		return f.mu.users
	}
	f.log.Info("sasl: PLAIN users file reloaded", "file", f.path, "users", len(users))
	f.mu.users, f.mu.stamp, f.mu.bad = users, st, fileStamp{}
	return users
}

type plainExchange struct {
	users PlainUsers
	done  bool
}

// Step checks the one PLAIN message: [authzid] NUL authcid NUL passwd. An
// authorization id other than the user's own is refused.
func (e *plainExchange) Step(_ context.Context, msg []byte) ([]byte, bool, string, error) {
	if e.done {
		return nil, false, "", fmt.Errorf("%w: PLAIN: a second message", kafka.ErrSASLAuthFailed)
	}
	e.done = true
	authz, user, pass, err := parsePlain(msg)
	if err != nil {
		return nil, false, "", err
	}
	if authz != "" && authz != user {
		return nil, false, "", fmt.Errorf("%w: PLAIN: authorization id differs from the user", kafka.ErrSASLAuthFailed)
	}
	want, ok := e.users[user]
	// Compare digests, so that the time taken says nothing of the length.
	got, exp := sha256.Sum256([]byte(pass)), sha256.Sum256([]byte(want))
	if subtle.ConstantTimeCompare(got[:], exp[:]) != 1 || !ok {
		return nil, false, "", fmt.Errorf("%w: PLAIN: invalid user name or password", kafka.ErrSASLAuthFailed)
	}
	return nil, true, user, nil
}

// parsePlain splits a PLAIN message into its three fields.
func parsePlain(msg []byte) (authz, user, pass string, err error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 || len(parts[1]) == 0 || len(parts[2]) == 0 || len(msg) > 1<<16 {
		return "", "", "", fmt.Errorf("%w: PLAIN: malformed message", kafka.ErrSASLAuthFailed)
	}
	return string(parts[0]), string(parts[1]), string(parts[2]), nil
}
