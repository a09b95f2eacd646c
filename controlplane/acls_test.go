package controlplane

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-io/shale/authz/acl"
)

func TestACLsShareBindingsThroughWatches(t *testing.T) {
	srv := startNATS(t)
	s1 := openStore(t, connect(t, srv), StoreConfig{})
	s2 := openStore(t, connect(t, srv), StoreConfig{})
	ctx := testCtx(t)

	var seen2 atomic.Pointer[acl.Set]
	a1, err := OpenACLs(ctx, s1, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a1.Close)
	a2, err := OpenACLs(ctx, s2, func(s *acl.Set) { seen2.Store(s) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a2.Close)
	if s := seen2.Load(); s == nil || s.Len() != 0 {
		t.Fatalf("the open must hand over the (empty) set: %v", s)
	}

	read := acl.Binding{ResourceType: acl.ResourceTopic, ResourceName: "pay-", PatternType: acl.PatternPrefixed,
		Principal: "User:alice", Host: "*", Operation: acl.OpRead, Permission: acl.Allow}
	write := read
	write.Operation, write.ResourceName, write.PatternType = acl.OpWrite, "orders", acl.PatternLiteral
	for _, b := range []acl.Binding{read, write, read} { // the second read is stored once
		if err := a1.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if n := a1.Set().Len(); n != 2 {
		t.Fatalf("the creating node sees %d bindings at once, want 2", n)
	}
	eventually(t, 5*time.Second, "the other node's authorizer to get both bindings", func() bool {
		s := seen2.Load()
		return s != nil && s.Len() == 2 && s.Decide("User:alice", "10.0.0.1", acl.OpRead, acl.Topic("pay-eu"), false).Allowed()
	})
	if err := a1.Create(ctx, acl.Binding{ResourceType: acl.ResourceTopic}); !errors.Is(err, acl.ErrInvalidBinding) {
		t.Fatalf("invalid binding: %v", err)
	}

	// A third node opening later loads what is stored.
	a3, err := OpenACLs(ctx, openStore(t, connect(t, srv), StoreConfig{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a3.Close)
	if a3.Set().Len() != 2 {
		t.Fatalf("a later node loaded %d bindings", a3.Set().Len())
	}

	f := acl.MatchAll
	f.Operation = acl.OpWrite
	deleted, err := a2.Delete(ctx, f)
	if err != nil || len(deleted) != 1 || deleted[0] != write {
		t.Fatalf("Delete = %v, %v; want the write binding", deleted, err)
	}
	if got := a2.Set().Select(acl.MatchAll); len(got) != 1 || got[0] != read {
		t.Fatalf("after the delete the deleting node has %v", got)
	}
	eventually(t, 5*time.Second, "the delete to reach the first node", func() bool { return a1.Set().Len() == 1 })
	if deleted, err := a1.Delete(ctx, f); err != nil || len(deleted) != 0 {
		t.Fatalf("deleting again: %v %v", deleted, err)
	}
}
