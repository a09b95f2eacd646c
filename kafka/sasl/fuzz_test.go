package sasl

import (
	"context"
	"errors"
	"testing"

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
