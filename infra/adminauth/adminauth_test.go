package adminauth

import (
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/testlog"
)

const (
	tokA = "token-a-0123456789abcdef"
	tokB = "token-b-0123456789abcdef"
)

// writeFile replaces path by renaming a complete file over it, as an
// operator rotating tokens should.
func writeFile(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// tokensAt loads path with a clock the test moves.
func tokensAt(t *testing.T, path string, now *time.Time, log *slog.Logger) *Tokens {
	t.Helper()
	tk, err := LoadTokens(path, log)
	if err != nil {
		t.Fatal(err)
	}
	tk.now = func() time.Time { return *now }
	tk.mu.checked = *now
	return tk
}

func TestTokensFileAndReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, "# the ops team\n  "+tokA+"  \n\n")
	logs := &testlog.Buffer{}
	now := time.Now()
	tk := tokensAt(t, path, &now, slog.New(slog.NewTextHandler(logs, nil)))
	for tok, want := range map[string]bool{tokA: true, tokB: false, "": false, tokA[:len(tokA)-1]: false, tokA + "x": false,
		"# the ops team": false} {
		if got := tk.Valid(tok); got != want {
			t.Fatalf("Valid(%q) = %v, want %v", tok, got, want)
		}
	}

	// Rotation: B replaces A; seen once the next look comes (a second).
	writeFile(t, path, tokB+"\n")
	os.Chtimes(path, now.Add(time.Minute), now.Add(time.Minute)) // a distinct modification time on coarse clocks
	if !tk.Valid(tokA) {
		t.Fatal("the file was looked at again within a second")
	}
	now = now.Add(statEvery)
	if tk.Valid(tokA) || !tk.Valid(tokB) {
		t.Fatal("after the rotation A still works or B does not")
	}

	// A change that does not load (a short token) keeps B and warns once.
	writeFile(t, path, tokA+"\nxyzzy\n")
	os.Chtimes(path, now.Add(2*time.Minute), now.Add(2*time.Minute))
	for range 3 {
		now = now.Add(statEvery)
		if !tk.Valid(tokB) || tk.Valid(tokA) {
			t.Fatal("a tokens file that does not load replaced the tokens")
		}
	}
	if n := strings.Count(logs.String(), "does not load"); n != 1 {
		t.Fatalf("%d warnings for one bad file, want 1:\n%s", n, logs)
	}
	// A removed file keeps them too.
	os.Remove(path)
	now = now.Add(statEvery)
	if !tk.Valid(tokB) {
		t.Fatal("a removed tokens file dropped the tokens")
	}
	if strings.Contains(logs.String(), tokA) || strings.Contains(logs.String(), tokB) || strings.Contains(logs.String(), "xyzzy") {
		t.Fatalf("a token reached the log:\n%s", logs)
	}
	if _, err := LoadTokens(path, nil); err == nil {
		t.Fatal("LoadTokens of a missing file")
	}
	writeFile(t, path, "tooshort\n")
	if _, err := LoadTokens(path, nil); err == nil || strings.Contains(err.Error(), "tooshort") {
		t.Fatalf("LoadTokens of a short token: %v (the error must not quote it)", err)
	}
}

func TestHandler(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, tokA+"\n")
	tk, err := LoadTokens(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("secret data")) })
	h := Handler(ok, Config{Tokens: tk, Open: []string{"/healthz"}, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	for _, tc := range []struct {
		path, auth string
		code       int
	}{
		{"/metrics", "", http.StatusUnauthorized},
		{"/metrics", "Bearer " + tokB, http.StatusForbidden},
		{"/metrics", "Basic " + tokA, http.StatusForbidden},
		// A browser's Basic credentials: the password is the token.
		{"/metrics", "Basic " + base64.StdEncoding.EncodeToString([]byte("ops:"+tokA)), http.StatusOK},
		{"/metrics", "Basic " + base64.StdEncoding.EncodeToString([]byte(":"+tokA)), http.StatusOK},
		{"/metrics", "Basic " + base64.StdEncoding.EncodeToString([]byte("ops:"+tokB)), http.StatusUnauthorized},
		{"/metrics", "Basic " + base64.StdEncoding.EncodeToString([]byte(tokA)), http.StatusForbidden},
		{"/metrics", "Bearer " + tokA, http.StatusOK},
		{"/metrics", "bearer  " + tokA, http.StatusOK},
		{"/healthz", "", http.StatusOK},
		{"/healthz/", "", http.StatusUnauthorized},
	} {
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body := rec.Body.String()
		if rec.Code != tc.code {
			t.Fatalf("%s %q: %d, want %d", tc.path, tc.auth, rec.Code, tc.code)
		}
		if tc.code != http.StatusOK && (strings.Contains(body, "secret") || strings.TrimSpace(body) != http.StatusText(tc.code)) {
			t.Fatalf("%s %q: body %q, want only the status text", tc.path, tc.auth, body)
		}
		if ch := rec.Header().Values("WWW-Authenticate"); (tc.code == http.StatusUnauthorized) != (len(ch) == 2) ||
			len(ch) == 2 && (!strings.HasPrefix(ch[0], "Bearer ") || !strings.HasPrefix(ch[1], "Basic ")) {
			t.Fatalf("%s %q: WWW-Authenticate %q, want Bearer and Basic on a 401 only", tc.path, tc.auth, ch)
		}
	}
	if !strings.Contains(logs.String(), `reason="invalid bearer token"`) || !strings.Contains(logs.String(), `reason="no credentials"`) ||
		strings.Contains(logs.String(), tokB) {
		t.Fatalf("refusal log:\n%s", logs)
	}

	// Without tokens or client certificates the handler is next itself.
	if got := Handler(ok, Config{}); got == nil {
		t.Fatal("nil handler")
	} else {
		rec := httptest.NewRecorder()
		got.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("open admin listener: %d", rec.Code)
		}
	}
}

// TestCrossOriginWrites: a request that may change something, sent by a
// browser from another origin, is refused whatever its credentials (a
// browser attaches Basic credentials and client certificates by itself),
// with tokens and without; reads and same-origin writes are served.
func TestCrossOriginWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, tokA+"\n")
	tk, err := LoadTokens(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("done")) })
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("ops:"+tokA))
	for name, h := range map[string]http.Handler{"tokens": Handler(ok, Config{Tokens: tk}), "open": Handler(ok, Config{})} {
		for _, tc := range []struct {
			method, origin, site string
			code                 int
		}{
			{http.MethodPost, "", "", http.StatusOK},
			{http.MethodPost, "http://admin.example:9644", "same-origin", http.StatusOK},
			{http.MethodPost, "http://ADMIN.example:9644", "", http.StatusOK},
			{http.MethodPost, "http://evil.example", "", http.StatusForbidden},
			{http.MethodPost, "http://admin.example:9645", "", http.StatusForbidden},
			{http.MethodPost, "null", "", http.StatusForbidden},
			{http.MethodPost, "", "cross-site", http.StatusForbidden},
			{http.MethodDelete, "", "same-site", http.StatusForbidden},
			{http.MethodGet, "http://evil.example", "cross-site", http.StatusOK},
		} {
			req := httptest.NewRequest(tc.method, "http://admin.example:9644/v1/brokers/decommission", nil)
			req.Header.Set("Authorization", basic)
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.site != "" {
				req.Header.Set("Sec-Fetch-Site", tc.site)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code {
				t.Fatalf("%s: %s from %q (%q): %d, want %d", name, tc.method, tc.origin, tc.site, rec.Code, tc.code)
			}
		}
	}
}

// TestRefusalLogIsRateLimited: a flood of refused requests logs at most
// refusalLogRate lines a second, and the next line says how many it left out.
func TestRefusalLogIsRateLimited(t *testing.T) {
	l := &limiter{rate: refusalLogRate}
	now := time.Unix(1000, 0)
	allowed := 0
	for range 100 {
		if _, ok := l.allow(now); ok {
			allowed++
		}
	}
	if allowed != refusalLogRate {
		t.Fatalf("%d lines in one second, want %d", allowed, refusalLogRate)
	}
	if s, ok := l.allow(now.Add(time.Second)); !ok || s != 100-refusalLogRate {
		t.Fatalf("next second: allowed %v, suppressed %d, want %d", ok, s, 100-refusalLogRate)
	}
}

// FuzzAuthorization: any Authorization header (outside bytes) is either a
// valid token or refused, never a panic; a header that authenticates
// carries the token.
func FuzzAuthorization(f *testing.F) {
	for _, s := range []string{"Bearer " + tokA, "Basic " + base64.StdEncoding.EncodeToString([]byte("u:"+tokA)), "Basic", "Basic !!", "bearer", " ", "Basic Og=="} {
		f.Add(s)
	}
	path := filepath.Join(f.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte(tokA+"\n"), 0o600); err != nil {
		f.Fatal(err)
	}
	tk, err := LoadTokens(path, nil)
	if err != nil {
		f.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	h := Handler(ok, Config{Tokens: tk})
	f.Fuzz(func(t *testing.T, auth string) {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Authorization", auth)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK:
			if tok, _ := bearer(req); tok != tokA {
				t.Fatalf("%q served, token %q", auth, tok)
			}
		case http.StatusUnauthorized, http.StatusForbidden:
		default:
			t.Fatalf("%q: %d", auth, rec.Code)
		}
	})
}

// TestRoles: a tokens file line may name its token's role; a token without
// one (the format before roles) is an admin. A read-only token reads and
// is refused a write with 403 saying why; an admin token does both; the
// handler passes the role on (RoleFrom). A role the file does not know
// fails the load, naming the line and not the token.
func TestRoles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens")
	tokC := "token-c-0123456789abcdef"
	writeFile(t, path, "# roles\n"+tokA+"\n"+tokB+"  read\n"+tokC+"\tADMIN\n")
	tk, err := LoadTokens(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for tok, want := range map[string]Role{tokA: RoleAdmin, tokB: RoleRead, tokC: RoleAdmin, tokB + "  read": RoleNone, "read": RoleNone} {
		if got := tk.Role(tok); got != want {
			t.Fatalf("Role(%q) = %v, want %v", tok, got, want)
		}
	}
	var seen Role
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = RoleFrom(r.Context()); w.Write([]byte("done")) })
	h := Handler(next, Config{Tokens: tk, Open: []string{"/healthz"}})
	for _, tc := range []struct {
		method, path, token string
		code                int
		role                Role
	}{
		{http.MethodGet, "/metrics", tokB, http.StatusOK, RoleRead},
		{http.MethodHead, "/metrics", tokB, http.StatusOK, RoleRead},
		{http.MethodPost, "/v1/console/elect-preferred", tokB, http.StatusForbidden, RoleNone},
		{http.MethodDelete, "/v1/x", tokB, http.StatusForbidden, RoleNone},
		{http.MethodPost, "/v1/console/elect-preferred", tokA, http.StatusOK, RoleAdmin},
		{http.MethodGet, "/metrics", tokC, http.StatusOK, RoleAdmin},
		{http.MethodGet, "/healthz", "", http.StatusOK, RoleNone},
	} {
		seen = RoleNone
		req := httptest.NewRequest(tc.method, tc.path, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("ops:"+tc.token)))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.code || seen != tc.role {
			t.Fatalf("%s %s with %q: %d, role %v; want %d, %v", tc.method, tc.path, tc.token, rec.Code, seen, tc.code, tc.role)
		}
		if tc.code == http.StatusForbidden && !strings.Contains(rec.Body.String(), "read-only") {
			t.Fatalf("%s %s with a read-only token: body %q, want it to say read-only", tc.method, tc.path, rec.Body.String())
		}
	}
	// Without tokens or client certificates every request is an admin's.
	seen = RoleNone
	rec := httptest.NewRecorder()
	Handler(next, Config{}).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/x", nil))
	if rec.Code != http.StatusOK || seen != RoleAdmin {
		t.Fatalf("open listener: %d, role %v", rec.Code, seen)
	}

	for _, bad := range []string{tokA + " write\n", tokA + " read extra\n", "short read\n"} {
		writeFile(t, path, "# ok\n"+bad)
		_, err := LoadTokens(path, nil)
		if !errors.Is(err, ErrTokensFile) || !strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), tokA) {
			t.Fatalf("tokens file %q: %v; want ErrTokensFile naming line 2, not the token", bad, err)
		}
	}
}

// FuzzTokensFile: a tokens file of any bytes loads or fails with
// ErrTokensFile, never panics, and every token it loads has a role and at
// least MinTokenLength characters' worth of line.
func FuzzTokensFile(f *testing.F) {
	for _, s := range []string{tokA + "\n", tokA + " read\n" + tokB + "\tadmin\n", "# c\n\n" + tokA + " write\n", tokA + " read x\n", "short\n", "\x00\xff " + tokA} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "tokens")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		tk, err := LoadTokens(path, nil)
		if err != nil {
			if !errors.Is(err, ErrTokensFile) {
				t.Fatalf("%v: not ErrTokensFile", err)
			}
			return
		}
		for _, h := range tk.mu.hashes {
			if h.role != RoleRead && h.role != RoleAdmin {
				t.Fatalf("a token loaded with role %v", h.role)
			}
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			fields := strings.Fields(line)
			if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
				continue
			}
			if want := map[int]Role{1: RoleAdmin}[len(fields)]; want != RoleNone && tk.Role(fields[0]) < want {
				t.Fatalf("line %q loaded, its token's role %v", line, tk.Role(fields[0]))
			}
		}
	})
}
