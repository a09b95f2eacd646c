package controlplane

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func testToken(id string, issue, expiry, max int64) DelegationToken {
	return DelegationToken{TokenID: id, Owner: "User:alice", Requester: "User:admin", Renewers: []string{"User:bob"},
		IssueMs: issue, ExpiryMs: expiry, MaxMs: max,
		SCRAM: []SCRAMCredential{{User: id, Mechanism: "SCRAM-SHA-256", Salt: []byte("s"), Iterations: 4096, StoredKey: []byte("k"), ServerKey: []byte("v")}}}
}

// TestDelegationTokens: tokens are shared by every handle on the bucket,
// changes are compare-and-set on revisions, and RemoveExpired removes only
// what expired.
func TestDelegationTokens(t *testing.T) {
	nc := connect(t, startNATS(t))
	ctx := testCtx(t)
	s, err := OpenDelegationTokens(ctx, nc, 1)
	if err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(1_000_000)
	live := testToken("tok-live", 1000, 2_000_000, 3_000_000)
	old := testToken("tok-old", 500, 999_999, 3_000_000)
	for _, tok := range []DelegationToken{live, old} {
		if err := s.Create(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Create(ctx, live); err == nil {
		t.Fatal("a token id was created twice")
	}
	if err := s.Create(ctx, testToken("bad", 10, 5, 20)); err == nil {
		t.Fatal("a token expiring before its issue was stored")
	}
	// A second handle (another node) sees the same tokens.
	s2, err := OpenDelegationTokens(ctx, nc, 1)
	if err != nil {
		t.Fatal(err)
	}
	got, rev, err := s2.Get(ctx, "tok-live")
	if err != nil || got.Owner != "User:alice" || got.Renewers[0] != "User:bob" || rev == 0 {
		t.Fatalf("Get: %+v %d %v", got, rev, err)
	}
	if c, ok := got.Credential("SCRAM-SHA-256"); !ok || string(c.StoredKey) != "k" {
		t.Fatalf("credential: %+v %v", c, ok)
	}
	if _, _, err := s2.Get(ctx, "no such, token/id"); !errors.Is(err, ErrNoDelegationToken) {
		t.Fatalf("Get unknown: %v", err)
	}
	got.ExpiryMs = 2_500_000
	if err := s.Update(ctx, got, rev); err != nil {
		t.Fatal(err)
	}
	if err := s2.Update(ctx, got, rev); !errors.Is(err, ErrDelegationTokenChanged) {
		t.Fatalf("update at a stale revision: %v", err)
	}
	if err := s2.Remove(ctx, "tok-live", rev); !errors.Is(err, ErrDelegationTokenChanged) {
		t.Fatalf("remove at a stale revision: %v", err)
	}
	removed, err := s2.RemoveExpired(ctx, now)
	if err != nil || len(removed) != 1 || removed[0] != "tok-old" {
		t.Fatalf("RemoveExpired: %v %v", removed, err)
	}
	all, err := s.List(ctx)
	if err != nil || len(all) != 1 || all[0].TokenID != "tok-live" || all[0].ExpiryMs != 2_500_000 {
		t.Fatalf("List: %+v %v", all, err)
	}
	if !all[0].Expired(time.UnixMilli(2_500_001)) || all[0].Expired(time.UnixMilli(2_500_000)) {
		t.Fatal("Expired disagrees with Kafka's timestamp < now")
	}
}

// FuzzDecodeDelegationToken: any value read from the bucket decodes to a
// valid token or fails without panicking, and a decoded token survives
// its encoding.
func FuzzDecodeDelegationToken(f *testing.F) {
	good, err := json.Marshal(testToken("tok-1", 1, 2, 3))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"token_id":"x","owner":"User:a","requester":"User:a","issue_ms":1,"expiry_ms":1,"max_ms":1}`))
	f.Add([]byte(`{"token_id":"x","scram":[{"user":"y"}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tok, err := DecodeDelegationToken(b)
		if err != nil {
			return
		}
		if tok.TokenID == "" || tok.ExpiryMs > tok.MaxMs || tok.ExpiryMs < tok.IssueMs {
			t.Fatalf("decoded an invalid token: %+v", tok)
		}
		for _, c := range tok.SCRAM {
			if c.User != tok.TokenID || len(c.StoredKey) == 0 {
				t.Fatalf("decoded an incomplete credential: %+v", c)
			}
		}
		data, err := json.Marshal(tok)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeDelegationToken(data)
		if err != nil || again.TokenID != tok.TokenID || again.ExpiryMs != tok.ExpiryMs || len(again.SCRAM) != len(tok.SCRAM) {
			t.Fatalf("round trip: %+v -> %+v, %v", tok, again, err)
		}
	})
}
