package partition

import (
	"errors"
	"math"
	"testing"

	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/segment/vfs"
)

func hdr(pid int64, epoch int16, seq int32, n int32, base int64) *batch.Header {
	return &batch.Header{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, LastOffsetDelta: n - 1, NumRecords: n, BaseOffset: base}
}

func TestProducerStateSequences(t *testing.T) {
	ps := NewProducerState()
	steps := []struct {
		h       *batch.Header
		wantErr error
		dupOf   int64 // expected original offset for a duplicate, -1 if none
	}{
		{hdr(7, 0, 0, 5, 0), nil, -1},                     // first batch of a new producer
		{hdr(7, 0, 5, 5, 5), nil, -1},                     // in sequence
		{hdr(7, 0, 5, 5, 99), nil, 5},                     // retried duplicate: answered with its original offset
		{hdr(7, 0, 20, 1, 10), ErrOutOfOrderSequence, -1}, // gap
		{hdr(7, -1+0, 10, 1, 10), ErrProducerFenced, -1},  // stale epoch
		{hdr(7, 1, 3, 1, 10), ErrOutOfOrderSequence, -1},  // new epoch must restart at 0
		{hdr(7, 1, 0, 2, 10), nil, -1},                    // new epoch at 0
		{hdr(8, 0, 42, 1, 12), nil, -1},                   // unknown producer may start anywhere
		{hdr(-1, -1, -1, 3, 13), nil, -1},                 // not idempotent: no checks
	}
	for i, s := range steps {
		dup, err := ps.Check(s.h)
		if !errors.Is(err, s.wantErr) {
			t.Fatalf("step %d: err %v, want %v", i, err, s.wantErr)
		}
		if s.dupOf >= 0 {
			if dup == nil || dup.FirstOffset != s.dupOf {
				t.Fatalf("step %d: dup %+v, want offset %d", i, dup, s.dupOf)
			}
			continue
		}
		if dup != nil {
			t.Fatalf("step %d: unexpected duplicate %+v", i, dup)
		}
		if err == nil {
			ps.Update(s.h)
		}
	}
}

func TestProducerStateKeepsFiveBatches(t *testing.T) {
	ps := NewProducerState()
	for i := int32(0); i < 7; i++ {
		h := hdr(1, 0, i, 1, int64(i))
		if dup, err := ps.Check(h); err != nil || dup != nil {
			t.Fatalf("batch %d: %v %v", i, dup, err)
		}
		ps.Update(h)
	}
	if dup, _ := ps.Check(hdr(1, 0, 2, 1, 0)); dup == nil || dup.FirstOffset != 2 {
		t.Fatalf("batch 2 is among the last five: %+v", dup)
	}
	// Batch 1 fell out of the window: it is no longer a known duplicate.
	if dup, err := ps.Check(hdr(1, 0, 1, 1, 0)); dup != nil || !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("batch 1: dup %+v err %v", dup, err)
	}
}

func TestSequenceWraps(t *testing.T) {
	ps := NewProducerState()
	h := hdr(3, 0, math.MaxInt32, 1, 0)
	ps.Update(h)
	if _, err := ps.Check(hdr(3, 0, 0, 1, 1)); err != nil {
		t.Fatalf("sequence after MaxInt32 must be 0: %v", err)
	}
}

func TestProducerStateSnapshotRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ps := NewProducerState()
	for pid := int64(1); pid <= 3; pid++ {
		for s := int32(0); s < 4; s++ {
			ps.Update(hdr(pid, int16(pid), s*2, 2, pid*100+int64(s)*2))
		}
	}
	for _, off := range []int64{10, 20, 30, 40} {
		if err := ps.WriteSnapshot(vfs.Default, dir, off, 3); err != nil {
			t.Fatal(err)
		}
	}
	if got := listSnapshots(vfs.Default, dir); len(got) != 3 || got[0] != 20 {
		t.Fatalf("kept snapshots %v, want the newest three", got)
	}
	loaded, at, err := LoadLatestSnapshot(vfs.Default, dir, 35)
	if err != nil {
		t.Fatal(err)
	}
	if at != 30 {
		t.Fatalf("loaded snapshot at %d, want 30 (40 is past the log end)", at)
	}
	if string(loaded.Encode()) != string(ps.Encode()) {
		t.Fatal("snapshot did not round-trip")
	}
	if got := listSnapshots(vfs.Default, dir); len(got) != 2 {
		t.Fatalf("snapshot beyond the log end should be removed: %v", got)
	}
	// A corrupt snapshot is skipped, not trusted.
	b := ps.Encode()
	b[len(b)/2] ^= 0xff
	if _, err := DecodeProducerState(b); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("corrupt snapshot: %v", err)
	}
}

func TestProducerStateTruncate(t *testing.T) {
	ps := NewProducerState()
	ps.Update(hdr(1, 0, 0, 2, 0))
	ps.Update(hdr(1, 0, 2, 2, 2))
	ps.Update(hdr(2, 0, 0, 1, 4))
	ps.TruncateTo(3)
	if ps.Len() != 1 {
		t.Fatalf("producer 2's only batch is gone, so is its entry: %d producers", ps.Len())
	}
	if _, err := ps.Check(hdr(1, 0, 2, 2, 0)); err != nil {
		t.Fatalf("after truncation producer 1 resumes at sequence 2: %v", err)
	}
}
