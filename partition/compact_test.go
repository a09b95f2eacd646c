package partition

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/shale-io/shale/segment/batch"
)

// TestCompaction: keys overwritten many times shrink to the latest value per
// key in the closed segments, offsets stay where they were, tombstones stay
// until delete.retention.ms has passed, and the log reopens cleanly.
func TestCompaction(t *testing.T) {
	dir := t.TempDir()
	cfg := map[string]string{"cleanup.policy": "compact", "segment.bytes": "600", "delete.retention.ms": "3600000"}
	r := openTest(t, dir, cfg, nil)
	now := time.Now()
	opts := batch.NoProducer()
	opts.FirstTimestamp = now.UnixMilli()
	written := map[int64]string{} // offset -> key
	for round := 0; round < 30; round++ {
		var recs []batch.Record
		for k := 0; k < 5; k++ {
			recs = append(recs, batch.Record{Key: []byte(fmt.Sprintf("k%d", k)), Value: []byte(fmt.Sprintf("v%d-%d", k, round))})
		}
		if round == 20 {
			recs = append(recs, batch.Record{Key: []byte("k0")}) // a tombstone for k0
		}
		b, err := batch.Build(nil, opts, recs)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.AppendLeader(b)
		if err != nil {
			t.Fatal(err)
		}
		for i, rec := range recs {
			written[res.BaseOffset+int64(i)] = string(rec.Key)
		}
	}
	// Overwrite k0 after its tombstone, so the tombstone is not the latest.
	// Then a final tombstone for k1 at the very end (in the active segment).
	leo := r.Log().LogEndOffset()
	segsBefore := len(r.Log().Segments())
	n, err := r.Compact(now)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || segsBefore < 3 {
		t.Fatalf("cleaned %d of %d segments", n, segsBefore)
	}
	if r.Log().LogEndOffset() != leo {
		t.Fatal("compaction moved the log end")
	}
	check := func(wantTombstone bool) {
		t.Helper()
		seen := map[string]int64{}
		prev := int64(-1)
		tomb := false
		var b []byte
		for off := int64(0); off < leo; {
			chunk, err := r.Log().ReadBytes(off, 64<<20, leo, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(chunk) == 0 {
				t.Fatalf("no data at %d below the log end %d", off, leo)
			}
			b = append(b, chunk...)
			next := off
			batch.Split(chunk, func(h *batch.Header, _ []byte) error { next = h.NextOffset(); return nil })
			off = next
		}
		segs := r.Log().Segments()
		activeBase := segs[len(segs)-1].BaseOffset
		err = batch.Split(b, func(h *batch.Header, raw []byte) error {
			if err := batch.VerifyCRC(raw); err != nil {
				return err
			}
			return batch.ForEachRecord(raw, 1<<20, func(rec *batch.Record) error {
				off := h.BaseOffset + int64(rec.OffsetDelta)
				if off <= prev {
					t.Fatalf("offsets not increasing: %d after %d", off, prev)
				}
				prev = off
				if written[off] != string(rec.Key) {
					t.Fatalf("offset %d holds key %s, written %s", off, rec.Key, written[off])
				}
				if rec.Value == nil {
					tomb = true
				}
				if off < activeBase {
					if _, dup := seen[string(rec.Key)]; dup {
						t.Fatalf("key %s kept twice in closed segments", rec.Key)
					}
					seen[string(rec.Key)] = off
				}
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if tomb != wantTombstone {
			t.Fatalf("tombstone present %v, want %v", tomb, wantTombstone)
		}
	}
	// The tombstone at round 20 is overwritten by k0's later values, so it
	// went with them; closed segments hold one record per key at most.
	check(false)

	// A tombstone that is the latest for its key stays until delete.retention.ms.
	tb, _ := batch.Build(nil, opts, []batch.Record{{Key: []byte("k3")}})
	res, err := r.AppendLeader(tb)
	if err != nil {
		t.Fatal(err)
	}
	written[res.BaseOffset] = "k3"
	if err := r.Log().Roll(); err != nil {
		t.Fatal(err)
	}
	leo = r.Log().LogEndOffset()
	if _, err := r.Compact(now); err != nil {
		t.Fatal(err)
	}
	check(true)
	if _, err := r.Compact(now.Add(2 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	check(false)

	// The cleaned log survives an unclean reopen (recovery rescans it).
	r.Close()
	r = openTest(t, dir, cfg, nil)
	defer r.Close()
	if r.Log().LogEndOffset() != leo {
		t.Fatalf("leo after reopen %d, want %d", r.Log().LogEndOffset(), leo)
	}
	check(false)
}

// TestCompactionStopsAtHighWatermark: a leader whose high watermark cannot
// advance (a follower in the ISR that does not fetch) holds a committed
// value of key k in a closed segment and a newer value above the high
// watermark. Compaction must keep the committed value: the newer one may
// be truncated (here: it is, as a deposed leader cuts its divergent
// tail), and the key must not be left without a value. Nothing at or
// above the high watermark is rewritten. Before the fix the committed
// value was dropped in favour of the uncommitted one, and after the
// truncation k had no value.
func TestCompactionStopsAtHighWatermark(t *testing.T) {
	r := openTest(t, t.TempDir(), map[string]string{"cleanup.policy": "compact", "segment.bytes": "400"}, nil)
	defer r.Close()
	opts := batch.NoProducer()
	opts.FirstTimestamp = time.Now().UnixMilli()
	put := func(key, value string) {
		t.Helper()
		b, err := batch.Build(nil, opts, []batch.Record{{Key: []byte(key), Value: []byte(value)}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.AppendLeader(b); err != nil {
			t.Fatal(err)
		}
	}
	// Committed: k=v1, then filler overwritten below the high watermark, in
	// closed segments.
	put("k", "v1")
	for i := 0; i < 20; i++ {
		put("f", fmt.Sprintf("filler-%d", i))
	}
	if err := r.Log().Roll(); err != nil {
		t.Fatal(err)
	}
	// From here the high watermark stays: follower 2 never fetches.
	r.SetAssignment(1, []int32{1, 2}, []int32{1, 2})
	hw := r.HighWatermark()
	put("k", "v2")
	for i := 0; i < 20; i++ {
		put("g", fmt.Sprintf("uncommitted-%d", i))
	}
	if err := r.Log().Roll(); err != nil {
		t.Fatal(err)
	}
	if r.HighWatermark() != hw {
		t.Fatalf("high watermark moved to %d", r.HighWatermark())
	}
	aboveBefore, err := r.Log().ReadBytes(hw, 1<<20, r.Log().LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Compact(time.Now()); err != nil {
		t.Fatal(err)
	}
	values := func() (k []string, f int) {
		for off := r.Log().LogStartOffset(); off < hw; {
			b, err := r.Log().ReadBytes(off, 1<<20, hw, true)
			if err != nil || len(b) == 0 {
				t.Fatalf("read at %d: %v", off, err)
			}
			batch.Split(b, func(h *batch.Header, raw []byte) error {
				off = h.NextOffset()
				return batch.ForEachRecord(raw, 1<<20, func(rec *batch.Record) error {
					switch string(rec.Key) {
					case "k":
						k = append(k, string(rec.Value))
					case "f":
						f++
					}
					return nil
				})
			})
		}
		return k, f
	}
	k, f := values()
	if f != 1 {
		t.Fatalf("%d records of the overwritten key f below the high watermark, want 1: compaction did not run", f)
	}
	if len(k) != 1 || k[0] != "v1" {
		t.Fatalf("key k below the high watermark after compaction: %q, want [v1] (the committed value)", k)
	}
	aboveAfter, err := r.Log().ReadBytes(hw, 1<<20, r.Log().LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(aboveBefore, aboveAfter) {
		t.Fatal("compaction rewrote records above the high watermark")
	}
	// The uncommitted tail goes (a new leader never had it): k keeps v1.
	r.SetLeadership(false, 1)
	if err := r.TruncateTo(hw); err != nil {
		t.Fatal(err)
	}
	if k, _ := values(); len(k) != 1 || k[0] != "v1" {
		t.Fatalf("key k after the truncation: %q, want [v1]", k)
	}
}
