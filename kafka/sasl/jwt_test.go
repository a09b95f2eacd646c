package sasl_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/testjwt"
	"github.com/shale-io/shale/kafka/sasl"
)

// jwksFile writes body to a file in dir and returns its file:// URL.
func jwksFile(t *testing.T, dir, name string, body []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, body, 0o600); err != nil {
		t.Fatal(err)
	}
	return "file://" + p
}

func claimsAt(now time.Time, sub string) map[string]any {
	return map[string]any{"sub": sub, "iss": "https://idp.example", "aud": "shale",
		"iat": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix()}
}

func with(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

// TestJWTValidation walks the validator through each algorithm, each claim
// rule and the attacks on key and algorithm choice.
func TestJWTValidation(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	keys := map[string]*testjwt.Key{}
	var all []*testjwt.Key
	for _, alg := range []string{"RS256", "RS384", "RS512", "PS256", "PS384", "ES256", "ES384", "ES512"} {
		k := testjwt.NewKey(t, "k-"+alg, alg)
		keys[alg] = k
		all = append(all, k)
	}
	stranger := testjwt.NewKey(t, "k-RS256", "RS256") // same kid, another key
	src, err := sasl.NewJWKSource(sasl.JWKSConfig{URL: jwksFile(t, t.TempDir(), "jwks.json", testjwt.JWKSOf(all...))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rules := sasl.ClaimRules{Issuer: "https://idp.example", Audience: []string{"other", "shale"}, ClockSkew: 30 * time.Second}
	v := sasl.NewJWTValidator(src, rules, func() time.Time { return now })
	good := claimsAt(now, "alice")
	rs := keys["RS256"]

	for _, alg := range []string{"RS256", "RS384", "RS512", "PS256", "PS384", "ES256", "ES384", "ES512"} {
		sub, exp, err := v.Validate(context.Background(), keys[alg].Sign(t, nil, good))
		if err != nil || sub != "alice" || !exp.Equal(now.Add(time.Hour)) {
			t.Fatalf("%s: %q %v %v", alg, sub, exp, err)
		}
	}
	for name, tok := range map[string]string{
		"exp within the skew":    rs.Sign(t, nil, with(good, "exp", now.Add(-10*time.Second).Unix())),
		"aud a list":             rs.Sign(t, nil, with(good, "aud", []string{"x", "shale"})),
		"nbf passed":             rs.Sign(t, nil, with(good, "nbf", now.Add(-time.Second).Unix())),
		"fractional dates":       rs.Sign(t, nil, with(good, "exp", float64(now.Unix())+3600.5)),
		"iat within the skew":    rs.Sign(t, nil, with(good, "iat", now.Add(20*time.Second).Unix())),
		"no kid, one key of its": keys["ES384"].Sign(t, map[string]any{"kid": nil}, good),
	} {
		if _, _, err := v.Validate(context.Background(), tok); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	bad := map[string]string{
		"expired":                 rs.Sign(t, nil, with(good, "exp", now.Add(-31*time.Second).Unix())),
		"no exp":                  rs.Sign(t, nil, with(good, "exp", nil)),
		"exp a string":            rs.Sign(t, nil, with(good, "exp", "tomorrow")),
		"no iat":                  rs.Sign(t, nil, with(good, "iat", nil)),
		"issued in the future":    rs.Sign(t, nil, with(good, "iat", now.Add(time.Minute).Unix())),
		"not valid yet":           rs.Sign(t, nil, with(good, "nbf", now.Add(time.Minute).Unix())),
		"wrong issuer":            rs.Sign(t, nil, with(good, "iss", "https://evil.example")),
		"no issuer":               rs.Sign(t, nil, with(good, "iss", nil)),
		"wrong audience":          rs.Sign(t, nil, with(good, "aud", "kafka")),
		"wrong audience list":     rs.Sign(t, nil, with(good, "aud", []string{"a", "b"})),
		"no sub":                  rs.Sign(t, nil, with(good, "sub", nil)),
		"empty sub":               rs.Sign(t, nil, with(good, "sub", "")),
		"sub a number":            rs.Sign(t, nil, with(good, "sub", 7)),
		"wrong key, same kid":     stranger.Sign(t, nil, good),
		"unknown kid":             rs.Sign(t, map[string]any{"kid": "nope"}, good),
		"alg none":                rs.Sign(t, map[string]any{"alg": "none"}, good),
		"HS256 with the JWK":      rs.Sign(t, map[string]any{"alg": "HS256"}, good),
		"RS256 header, EC key":    keys["ES256"].Sign(t, map[string]any{"alg": "RS256"}, good),
		"ES384 header, P-256 key": keys["ES256"].Sign(t, map[string]any{"alg": "ES384"}, good),
		"ES256 kid of an RSA key": keys["ES256"].Sign(t, map[string]any{"kid": "k-RS256"}, good),
		"crit header":             rs.Sign(t, map[string]any{"crit": []string{"exp"}}, good),
		"two dots only":           "a.b",
		"four parts":              rs.Sign(t, nil, good) + ".x",
		"padded base64":           strings.Replace(rs.Sign(t, nil, good), ".", "=.", 1),
	}
	// A signature over other claims: the payload swapped after signing.
	a := strings.Split(rs.Sign(t, nil, good), ".")
	b := strings.Split(rs.Sign(t, nil, with(good, "sub", "admin")), ".")
	bad["bad signature"] = a[0] + "." + b[1] + "." + a[2]
	// A flipped bit in the signature.
	sig := []byte(a[2])
	sig[10] ^= 'A' ^ 'B'
	if sig[10] == a[2][10] {
		sig[10] = 'C'
	}
	bad["flipped signature"] = a[0] + "." + a[1] + "." + string(sig)
	for name, tok := range bad {
		sub, _, err := v.Validate(context.Background(), tok)
		if !errors.Is(err, sasl.ErrInvalidToken) {
			t.Errorf("%s: subject %q, err %v; want ErrInvalidToken", name, sub, err)
		}
		if err != nil && strings.Contains(err.Error(), tok) {
			t.Errorf("%s: the token is in the error", name)
		}
	}

	// A key whose JWK names its algorithm verifies that algorithm only.
	pinned := testjwt.NewKey(t, "pinned", "RS256")
	jwk := `{"keys":[` + mustJSON(pinned.JWK(true)) + `]}`
	src2, err := sasl.NewJWKSource(sasl.JWKSConfig{URL: jwksFile(t, t.TempDir(), "p.json", []byte(jwk))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v2 := sasl.NewJWTValidator(src2, sasl.ClaimRules{SubClaim: "client_id"}, func() time.Time { return now })
	if _, _, err := v2.Validate(context.Background(), pinned.Sign(t, map[string]any{"alg": "PS256"}, good)); !errors.Is(err, sasl.ErrInvalidToken) {
		t.Errorf("PS256 with a key pinned to RS256: %v", err)
	}
	// sasl.oauthbearer.sub.claim.name, and no issuer or audience rule.
	if sub, _, err := v2.Validate(context.Background(), pinned.Sign(t, nil, with(good, "client_id", "svc-1", "iss", nil, "aud", nil))); err != nil || sub != "svc-1" {
		t.Errorf("client_id claim: %q %v", sub, err)
	}
}

func mustJSON(m map[string]string) string {
	var b strings.Builder
	b.WriteString("{")
	first := true
	for k, v := range m {
		if !first {
			b.WriteString(",")
		}
		first = false
		b.WriteString(`"` + k + `":"` + v + `"`)
	}
	b.WriteString("}")
	return b.String()
}

func TestParseJWKSSkipsUnusableKeys(t *testing.T) {
	k := testjwt.NewKey(t, "good", "ES256")
	doc := `{"keys":[{"kty":"oct","kid":"secret","k":"c2VjcmV0"},` +
		`{"kty":"RSA","kid":"small","n":"AQAB","e":"AQAB"},` +
		`{"kty":"EC","kid":"offcurve","crv":"P-256","x":"` + strings.Repeat("A", 43) + `","y":"` + strings.Repeat("A", 43) + `"},` +
		`{"kty":"RSA","kid":"enc","use":"enc","n":"AQAB","e":"AQAB"},` +
		`{"kty":"RSA","kid":"hs","alg":"HS256","n":"AQAB","e":"AQAB"},` +
		mustJSON(k.JWK(false)) + `]}`
	set, err := sasl.ParseJWKS([]byte(doc))
	if err != nil || set.Len() != 1 {
		t.Fatalf("ParseJWKS: %v keys, %v; want the one EC key", set, err)
	}
	if _, err := sasl.ParseJWKS([]byte(`{"keys":[{"kty":"oct","k":"eA"}]}`)); !errors.Is(err, sasl.ErrJWKS) {
		t.Fatalf("a set of secrets only: %v", err)
	}
	if _, err := sasl.ParseJWKS([]byte(`{"keys":[]} {}`)); !errors.Is(err, sasl.ErrJWKS) {
		t.Fatalf("trailing data: %v", err)
	}
}

// TestJWKSFileReload: a file:// JWKS is read again when it changes (renamed
// over), and a file that does not load keeps the previous keys.
func TestJWKSFileReload(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	k1, k2 := testjwt.NewKey(t, "k1", "ES256"), testjwt.NewKey(t, "k2", "RS256")
	src, err := sasl.NewJWKSource(sasl.JWKSConfig{URL: jwksFile(t, dir, "jwks.json", testjwt.JWKSOf(k1))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := sasl.NewJWTValidator(src, sasl.ClaimRules{}, nil)
	ctx := context.Background()
	if _, _, err := v.Validate(ctx, k1.Sign(t, nil, claimsAt(now, "a"))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := v.Validate(ctx, k2.Sign(t, nil, claimsAt(now, "a"))); !errors.Is(err, sasl.ErrInvalidToken) {
		t.Fatalf("k2 before rotation: %v", err)
	}
	replace := func(body []byte) {
		jwksFile(t, dir, "new.json", body)
		if err := os.Rename(filepath.Join(dir, "new.json"), filepath.Join(dir, "jwks.json")); err != nil {
			t.Fatal(err)
		}
	}
	replace(testjwt.JWKSOf(k2))
	if _, _, err := v.Validate(ctx, k2.Sign(t, nil, claimsAt(now, "a"))); err != nil {
		t.Fatalf("k2 after rotation: %v", err)
	}
	if _, _, err := v.Validate(ctx, k1.Sign(t, nil, claimsAt(now, "a"))); !errors.Is(err, sasl.ErrInvalidToken) {
		t.Fatalf("k1 after rotation: %v", err)
	}
	replace([]byte(`{"keys": [`)) // half-written: the k2 set stays
	if _, _, err := v.Validate(ctx, k2.Sign(t, nil, claimsAt(now, "a"))); err != nil {
		t.Fatalf("k2 after a bad file: %v", err)
	}
	if _, err := sasl.NewJWKSource(sasl.JWKSConfig{URL: "file://" + filepath.Join(dir, "missing.json")}, nil); !errors.Is(err, sasl.ErrJWKS) {
		t.Fatalf("a missing file at start: %v", err)
	}
	if _, err := sasl.NewJWKSource(sasl.JWKSConfig{URL: "ftp://idp/jwks"}, nil); !errors.Is(err, sasl.ErrJWKS) {
		t.Fatalf("an ftp URL: %v", err)
	}
}

// TestJWKSURL: a JWKS URL is fetched at the first login and cached; a kid
// the set does not hold refetches it (the provider rotated), at most once
// per retry backoff; a stale set is refetched; a failing or hanging
// endpoint keeps the last set, within the timeout.
func TestJWKSURL(t *testing.T) {
	k1, k2 := testjwt.NewKey(t, "k1", "ES256"), testjwt.NewKey(t, "k2", "ES256")
	var body atomic.Pointer[[]byte]
	var fetches atomic.Int32
	var hang atomic.Bool
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if hang.Load() {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		b := body.Load()
		if b == nil {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Write(*b)
	}))
	defer srv.Close()
	defer close(release)
	set := func(b []byte) { body.Store(&b) }
	set(testjwt.JWKSOf(k1))

	clock := time.Now()
	var now atomic.Pointer[time.Time]
	now.Store(&clock)
	advance := func(d time.Duration) { t2 := now.Load().Add(d); now.Store(&t2) }
	src, err := sasl.NewJWKSource(sasl.JWKSConfig{URL: srv.URL + "/jwks", Refresh: time.Hour, RetryBackoff: 10 * time.Second,
		Timeout: 200 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sasl.SetJWKSClock(src, func() time.Time { return *now.Load() })
	v := sasl.NewJWTValidator(src, sasl.ClaimRules{}, nil)
	ctx := context.Background()
	login := func(k *testjwt.Key) error {
		_, _, err := v.Validate(ctx, k.Sign(t, nil, claimsAt(time.Now(), "a")))
		return err
	}
	if fetches.Load() != 0 {
		t.Fatal("fetched before the first login")
	}
	for range 3 {
		if err := login(k1); err != nil {
			t.Fatal(err)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Fatalf("%d fetches for three logins, want 1 (cached)", n)
	}
	// The provider rotates to k2: the unknown kid refetches, once per backoff.
	set(testjwt.JWKSOf(k1, k2))
	if err := login(k2); err == nil {
		t.Fatal("k2 within the backoff of the last fetch was accepted without a fetch")
	}
	advance(11 * time.Second)
	if err := login(k2); err != nil {
		t.Fatalf("k2 after rotation: %v", err)
	}
	if n := fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
	// Tokens with random kids do not fetch again within the backoff.
	for i := range 5 {
		tok := k1.Sign(t, map[string]any{"kid": "random-" + string(rune('a'+i))}, claimsAt(time.Now(), "a"))
		if _, _, err := v.Validate(ctx, tok); !errors.Is(err, sasl.ErrInvalidToken) {
			t.Fatal(err)
		}
	}
	if n := fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after random kids within the backoff, want 2", n)
	}
	// Past the refresh, the endpoint is down: the previous set stays.
	body.Store(nil)
	advance(2 * time.Hour)
	if err := login(k2); err != nil {
		t.Fatalf("endpoint down: %v", err)
	}
	if n := fetches.Load(); n != 3 {
		t.Fatalf("%d fetches, want 3", n)
	}
	// A hanging endpoint is abandoned after the timeout.
	hang.Store(true)
	advance(2 * time.Hour)
	start := time.Now()
	if err := login(k1); err != nil {
		t.Fatalf("endpoint hanging: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("a hanging fetch took %v, timeout 200ms", d)
	}
	// A login before any fetch succeeded fails.
	src2, err := sasl.NewJWKSource(sasl.JWKSConfig{URL: srv.URL + "/jwks", Timeout: 100 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sasl.NewJWTValidator(src2, sasl.ClaimRules{}, nil).Validate(ctx, k1.Sign(t, nil, claimsAt(time.Now(), "a"))); !errors.Is(err, sasl.ErrInvalidToken) {
		t.Fatalf("no set ever fetched: %v", err)
	}
}

// TestPlainUsersFileReload: the PLAIN users file is read again when it is
// replaced; a replacement that does not load keeps the previous users.
func TestPlainUsersFileReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "users")
	if err := os.WriteFile(path, []byte("alice:a-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := sasl.OpenPlainUsersFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := sasl.PlainFileMechanism(f)
	login := func(user, pass string) error {
		_, _, _, err := m.Start().Step(context.Background(), []byte("\x00"+user+"\x00"+pass))
		return err
	}
	if err := login("alice", "a-secret"); err != nil {
		t.Fatal(err)
	}
	replace := func(body string) {
		if err := os.WriteFile(filepath.Join(dir, "new"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "new"), path); err != nil {
			t.Fatal(err)
		}
	}
	replace("bob:b-secret\n")
	if err := login("bob", "b-secret"); err != nil {
		t.Fatalf("bob after the reload: %v", err)
	}
	if err := login("alice", "a-secret"); err == nil {
		t.Fatal("alice, removed from the file, still logs in")
	}
	replace("carol-without-a-password\n")
	if err := login("bob", "b-secret"); err != nil {
		t.Fatalf("bob after a file that does not load: %v", err)
	}
	if _, err := sasl.OpenPlainUsersFile(filepath.Join(dir, "missing"), nil); err == nil {
		t.Fatal("a missing users file opened")
	}
}
