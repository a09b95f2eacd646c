package sasl

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/testjwt"
	"github.com/shale-io/shale/kafka"
)

// FuzzSCRAMMessages feeds arbitrary client-first and client-final messages
// to a SCRAM-SHA-256 exchange for a known user: it must never panic, and
// never report an authenticated user without a valid proof (which random
// bytes cannot make).
func FuzzSCRAMMessages(f *testing.F) {
	f.Add([]byte("n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL"), []byte("c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="))
	f.Add([]byte("n,a=alice,n=alice,r=x,tokenauth=true"), []byte("c=biws,r=x,p="))
	f.Add([]byte("y,,n=al=2Cice,r=abc"), []byte(""))
	f.Add([]byte{}, []byte{0xff, 0x00})
	cred, err := NewCredential(ScramSHA256, "alice", "alice-secret", 0)
	if err != nil {
		f.Fatal(err)
	}
	mech, err := SCRAM(ScramSHA256, func(_ context.Context, user string) (Credential, error) {
		if user != "alice" {
			return Credential{}, ErrUnknownUser
		}
		return cred, nil
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, first, final []byte) {
		ex := mech.Start()
		for _, msg := range [][]byte{first, final, final} {
			_, done, user, err := ex.Step(context.Background(), msg)
			if done {
				t.Fatalf("authenticated %q from fuzzed messages", user)
			}
			if err != nil {
				if !errors.Is(err, kafka.ErrSASLAuthFailed) {
					t.Fatalf("error %v is not ErrSASLAuthFailed", err)
				}
				return
			}
		}
	})
}

// FuzzPlainMessage checks PLAIN's parser: never a panic, and an accepted
// message is exactly authzid NUL user NUL password.
func FuzzPlainMessage(f *testing.F) {
	f.Add([]byte("\x00alice\x00alice-secret"))
	f.Add([]byte("alice\x00alice\x00alice-secret"))
	f.Add([]byte("\x00\x00"))
	f.Add([]byte("\x00alice\x00alice-secret\x00"))
	users := PlainUsers{"alice": "alice-secret"}
	f.Fuzz(func(t *testing.T, msg []byte) {
		_, done, user, err := PlainMechanism(users).Start().Step(context.Background(), msg)
		switch {
		case err != nil && !errors.Is(err, kafka.ErrSASLAuthFailed):
			t.Fatalf("error %v is not ErrSASLAuthFailed", err)
		case done && user != "alice":
			t.Fatalf("authenticated %q", user)
		case done:
			authz, u, p, perr := parsePlain(msg)
			if perr != nil || u != "alice" || p != "alice-secret" || (authz != "" && authz != "alice") {
				t.Fatalf("accepted %q", msg)
			}
		}
	})
}

// FuzzOAuthBearerMessage checks the OAUTHBEARER initial-response parser:
// never a panic, and what it accepts is exactly the message it parsed (the
// fields put back together parse to the same fields).
func FuzzOAuthBearerMessage(f *testing.F) {
	f.Add([]byte("n,,\x01auth=Bearer eyJh.eyJz.c2ln\x01\x01"))
	f.Add([]byte("n,a=alice,\x01auth=bearer   abc\x01host=kafka\x01port=9092\x01\x01"))
	f.Add([]byte("n,a=a=2Cb=3Dc,\x01auth=Bearer x\x01\x01"))
	f.Add([]byte("\x01"))
	f.Add([]byte("n,,\x01auth=Bearer x\x01auth=Bearer y\x01\x01"))
	f.Add([]byte("y,,\x01auth=Bearer x\x01\x01"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		first, err := parseOAuthBearer(msg)
		if err != nil {
			return
		}
		if first.token == "" || strings.ContainsAny(first.token, " \x01") {
			t.Fatalf("accepted token %q", first.token)
		}
		var b strings.Builder
		b.WriteString("n,")
		if first.authzid != "" {
			b.WriteString("a=" + strings.NewReplacer("=", "=3D", ",", "=2C").Replace(first.authzid))
		}
		b.WriteString(",\x01auth=Bearer " + first.token + "\x01")
		for k, v := range first.extensions {
			b.WriteString(k + "=" + v + "\x01")
		}
		b.WriteString("\x01")
		again, err := parseOAuthBearer([]byte(b.String()))
		if err != nil || again.token != first.token || again.authzid != first.authzid || len(again.extensions) != len(first.extensions) {
			t.Fatalf("%q parsed as %+v, which does not parse back (%v, %+v)", msg, first, err, again)
		}
	})
}

// FuzzJWT feeds arbitrary tokens to the validator of a JWKS holding one
// RSA and one EC key: never a panic, every failure is ErrInvalidToken, and
// the tokens accepted are the two seeds the RSA key signed (RSA PKCS#1
// v1.5 signatures are unique, so no other string can verify).
func FuzzJWT(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	rs, es := testjwt.NewKey(f, "rs", "RS256"), testjwt.NewKey(f, "es", "ES256")
	claims := map[string]any{"sub": "alice", "iat": now.Unix() - 60, "exp": now.Unix() + 3600, "aud": []string{"shale"}}
	good, noKid := rs.Sign(f, nil, claims), rs.Sign(f, map[string]any{"kid": nil}, claims)
	f.Add(good)
	f.Add(noKid)
	f.Add(rs.Sign(f, map[string]any{"alg": "none"}, claims))
	f.Add(rs.Sign(f, map[string]any{"alg": "HS256"}, claims))
	f.Add(es.Sign(f, map[string]any{"crit": []string{"b64"}}, claims))
	f.Add("e30.e30.")
	f.Add("..")
	dir := f.TempDir()
	path := dir + "/jwks.json"
	if err := os.WriteFile(path, testjwt.JWKSOf(rs), 0o600); err != nil {
		f.Fatal(err)
	}
	src, err := NewJWKSource(JWKSConfig{URL: "file://" + path}, nil)
	if err != nil {
		f.Fatal(err)
	}
	v := NewJWTValidator(src, ClaimRules{Audience: []string{"shale"}}, func() time.Time { return now })
	f.Fuzz(func(t *testing.T, token string) {
		sub, _, err := v.Validate(context.Background(), token)
		switch {
		case err != nil && !errors.Is(err, ErrInvalidToken):
			t.Fatalf("error %v is not ErrInvalidToken", err)
		case err == nil && ((token != good && token != noKid) || sub != "alice"):
			t.Fatalf("accepted %q as %q", token, sub)
		}
	})
}
