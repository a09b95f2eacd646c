package segment

import (
	"math/rand/v2"
	"testing"

	"github.com/shale-io/shale/segment/batch"
)

// readWithoutTail is Read with every segment's tail ring set aside, so the
// answer comes from the index and the batch headers in the file.
func readWithoutTail(l *Log, offset int64, maxBytes int, maxOffset int64, minOne bool) (ReadResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	saved := make([]*tailRing, len(l.mu.segments))
	for i, s := range l.mu.segments {
		saved[i], s.tail = s.tail, nil
	}
	defer func() {
		for i, s := range l.mu.segments {
			s.tail = saved[i]
		}
	}()
	return l.readLocked(offset, maxBytes, maxOffset, minOne)
}

// TestTailReadsMatchFileReads appends batches of random sizes (rolling
// segments and truncating now and then, as a follower does) and checks
// that every read near the tail, answered from the tail ring, is the read
// the index and the file give.
func TestTailReadsMatchFileReads(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cfg := testConfig(newFakeClock())
	cfg.SegmentBytes = 64 << 10
	cfg.IndexIntervalBytes = 4096
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()

	compared, fromRing := 0, 0
	for step := range 600 {
		b := buildBatch(t, batchSpec{records: 1 + rng.IntN(4), valueSize: 10 + rng.IntN(1500)})
		mustAppend(t, l, b, 0)
		if step%97 == 96 {
			// Cut a few batches off, as a follower truncating its divergent tail.
			leo := l.LogEndOffset()
			to := max(leo-int64(1+rng.IntN(12)), 1)
			if err := l.Truncate(to); err != nil {
				t.Fatalf("Truncate(%d): %v", to, err)
			}
		}
		leo := l.LogEndOffset()
		for range 8 {
			off := max(leo-int64(rng.IntN(60)), l.LogStartOffset())
			maxBytes := rng.IntN(8000)
			maxOffset := leo - int64(rng.IntN(3))
			minOne := rng.IntN(2) == 0
			got, err1 := l.Read(off, maxBytes, maxOffset, minOne)
			want, err2 := readWithoutTail(l, off, maxBytes, maxOffset, minOne)
			if (err1 == nil) != (err2 == nil) {
				t.Fatalf("step %d: Read(%d, %d, %d, %v): error %v, without the ring %v", step, off, maxBytes, maxOffset, minOne, err1, err2)
			}
			if got != want {
				t.Fatalf("step %d: Read(%d, %d, %d, %v) = %+v, without the ring %+v", step, off, maxBytes, maxOffset, minOne, got, want)
			}
			compared++
			l.mu.RLock()
			if s := l.active(); s.tail != nil {
				if _, _, ok := s.tail.find(off); ok {
					fromRing++
				}
			}
			l.mu.RUnlock()
		}
	}
	if n := len(l.Segments()); n < 3 {
		t.Fatalf("%d segments: the test meant to cross rolls", n)
	}
	// The comparison is only worth something if the ring answered often.
	if fromRing < compared/2 {
		t.Fatalf("the ring answered %d of %d reads", fromRing, compared)
	}
}

// TestTailRingDroppedOnRoll checks that only the active segment keeps a
// tail ring.
func TestTailRingDroppedOnRoll(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig(newFakeClock()))
	defer l.Close()
	mustAppend(t, l, buildBatch(t, batchSpec{records: 2, valueSize: 10}), 0)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, buildBatch(t, batchSpec{records: 2, valueSize: 10}), 0)
	l.mu.RLock()
	defer l.mu.RUnlock()
	segs := l.mu.segments
	if len(segs) != 2 || segs[0].tail != nil || segs[1].tail == nil || segs[1].tail.n != 1 {
		t.Fatalf("after a roll: %d segments, old tail %v, active tail %v", len(segs), segs[0].tail, segs[1].tail)
	}
}

// TestTailRingWraps checks find and headerAt over a ring that has wrapped.
func TestTailRingWraps(t *testing.T) {
	var r tailRing
	pos := int64(0)
	for i := range int64(tailBatches + 5) {
		h := buildHeaderForTail(i*3, 2, 100)
		r.add(&h, pos)
		pos += int64(h.Size())
	}
	oldest := r.at(0)
	if oldest.base != 5*3 {
		t.Fatalf("oldest base %d, want 15", oldest.base)
	}
	if _, _, ok := r.find(oldest.base - 1); ok {
		t.Fatal("found an offset below the ring")
	}
	for i := range tailBatches {
		e := r.at(i)
		for off := e.base; off <= e.last(); off++ {
			p, h, ok := r.find(off)
			if !ok || p != e.pos || h.BaseOffset != e.base {
				t.Fatalf("find(%d) = %d, %d, %v; want %d, %d", off, p, h.BaseOffset, ok, e.pos, e.base)
			}
		}
		if h, ok := r.headerAt(e.pos); !ok || h.BaseOffset != e.base {
			t.Fatalf("headerAt(%d) = %d, %v", e.pos, h.BaseOffset, ok)
		}
		if _, ok := r.headerAt(e.pos + 1); ok {
			t.Fatalf("headerAt(%d) found a batch mid-batch", e.pos+1)
		}
	}
	last := r.at(r.n - 1)
	if _, _, ok := r.find(last.last() + 1); ok {
		t.Fatal("found an offset past the ring")
	}
	r.truncate(last.pos)
	if r.n != tailBatches-1 {
		t.Fatalf("after truncate: %d entries", r.n)
	}
	if _, _, ok := r.find(last.base); ok {
		t.Fatal("found a truncated batch")
	}
}

// buildHeaderForTail is the header of a batch at base with records
// records of valueSize bytes, as the ring stores it.
func buildHeaderForTail(base int64, records int32, valueSize int32) batch.Header {
	return batch.Header{BaseOffset: base, LastOffsetDelta: records - 1,
		Length: batch.HeaderSize - batch.LogOverhead + records*valueSize}
}
