package controlplane

import (
	"fmt"
	"testing"
)

// TestKVCreateMany: a pipelined create of more keys than one window makes
// every key with its value and returns each one's revision; a key whose last
// operation is a delete is created again; a key that exists stops it with
// a lost compare-and-set, after the keys before it.
func TestKVCreateMany(t *testing.T) {
	ns := startNATS(t)
	s := openStore(t, connect(t, ns), StoreConfig{})
	ctx := testCtx(t)
	n := kvCreatePipeline*2 + 7
	keys := make([]string, n)
	values := make([][]byte, n)
	for i := range keys {
		keys[i], values[i] = fmt.Sprintf("many.%d", i), []byte(fmt.Sprint(i))
	}
	// Key 3 existed and was deleted: created again.
	if _, err := s.partsKV.Create(ctx, keys[3], []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := s.partsKV.Delete(ctx, keys[3]); err != nil {
		t.Fatal(err)
	}
	revs, err := kvCreateMany(ctx, s.js, s.partsKV, BucketPartitions, keys, values)
	if err != nil {
		t.Fatal(err)
	}
	if len(revs) != n {
		t.Fatalf("%d revisions for %d keys", len(revs), n)
	}
	for i, k := range keys {
		e, err := s.partsKV.Get(ctx, k)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if string(e.Value()) != string(values[i]) || e.Revision() != revs[i] {
			t.Fatalf("%s: %q at revision %d, want %q at %d", k, e.Value(), e.Revision(), values[i], revs[i])
		}
	}

	// An existing key in the middle of a second batch.
	more := []string{"more.0", "more.1", keys[5], "more.3"}
	got, err := kvCreateMany(ctx, s.js, s.partsKV, BucketPartitions, more, [][]byte{{1}, {2}, {3}, {4}})
	if err == nil || !isWrongLastSeq(err) {
		t.Fatalf("creating an existing key: %v, want a lost compare-and-set", err)
	}
	if len(got) != 2 {
		t.Fatalf("%d revisions returned before the existing key, want 2", len(got))
	}
	if e, err := s.partsKV.Get(ctx, keys[5]); err != nil || string(e.Value()) != "5" {
		t.Fatalf("the existing key was changed: %v", err)
	}
}
