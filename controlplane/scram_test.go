package controlplane

import (
	"errors"
	"testing"
)

func TestSCRAMCredentials(t *testing.T) {
	nc := connect(t, startNATS(t))
	ctx := testCtx(t)
	s, err := OpenSCRAMCredentials(ctx, nc, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.List(ctx); err != nil || len(got) != 0 {
		t.Fatalf("empty bucket: %v %v", got, err)
	}
	// A user name may hold characters a key may not.
	odd := "CN=app, O=payments/ü"
	for _, c := range []SCRAMCredential{
		{User: odd, Mechanism: "SCRAM-SHA-512", Salt: []byte("s1"), Iterations: 4096, StoredKey: []byte("k1"), ServerKey: []byte("v1")},
		{User: "alice", Mechanism: "SCRAM-SHA-256", Salt: []byte("s2"), Iterations: 8192, StoredKey: []byte("k2"), ServerKey: []byte("v2")},
		{User: "alice", Mechanism: "SCRAM-SHA-512", Salt: []byte("s3"), Iterations: 4096, StoredKey: []byte("k3"), ServerKey: []byte("v3")},
	} {
		if err := s.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, SCRAMCredential{User: "bob", Mechanism: "SCRAM-SHA-256"}); err == nil {
		t.Fatal("an incomplete credential was stored")
	}
	c, err := s.Get(ctx, "SCRAM-SHA-512", odd)
	if err != nil || string(c.StoredKey) != "k1" || c.Iterations != 4096 || c.User != odd {
		t.Fatalf("Get %q: %+v %v", odd, c, err)
	}
	if _, err := s.Get(ctx, "SCRAM-SHA-256", odd); !errors.Is(err, ErrNoSCRAMCredential) {
		t.Fatalf("other mechanism: %v", err)
	}
	// A second handle (another node) sees the same credentials.
	s2, err := OpenSCRAMCredentials(ctx, nc, 1)
	if err != nil {
		t.Fatal(err)
	}
	all, err := s2.List(ctx)
	if err != nil || len(all) != 3 || all[0].User != odd || all[1].Mechanism != "SCRAM-SHA-256" || all[2].Mechanism != "SCRAM-SHA-512" {
		t.Fatalf("List: %+v %v", all, err)
	}
	if err := s2.Delete(ctx, "SCRAM-SHA-256", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "SCRAM-SHA-256", "alice"); !errors.Is(err, ErrNoSCRAMCredential) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := s.Get(ctx, "SCRAM-SHA-256", "alice"); !errors.Is(err, ErrNoSCRAMCredential) {
		t.Fatalf("after delete: %v", err)
	}
}
