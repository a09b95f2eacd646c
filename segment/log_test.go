package segment

import (
	"errors"
	"math"
	"testing"
)

func TestAppendReadEveryOffset(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig(clock)
	cfg.IndexIntervalBytes = 200
	cfg.SegmentBytes = 3000
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()

	var next int64
	for i := 0; i < 60; i++ {
		n := 1 + i%5
		info := mustAppend(t, l, buildBatch(t, batchSpec{records: n, firstTs: 1000 + int64(i), valueSize: 20 + i}), 3)
		if info.FirstOffset != next || info.LastOffset != next+int64(n)-1 {
			t.Fatalf("append %d: offsets [%d, %d], want [%d, %d]", i, info.FirstOffset, info.LastOffset, next, next+int64(n)-1)
		}
		next += int64(n)
	}
	if l.LogEndOffset() != next {
		t.Fatalf("LEO %d, want %d", l.LogEndOffset(), next)
	}
	if len(l.Segments()) < 3 {
		t.Fatalf("expected several segments from segment.bytes, got %d", len(l.Segments()))
	}
	for off := int64(0); off < next; off++ {
		b, err := l.ReadBytes(off, 1, math.MaxInt64, true)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		rbs := decodeBatches(t, b)
		if len(rbs) != 1 {
			t.Fatalf("read %d with maxBytes 1 and minOneBatch: %d batches", off, len(rbs))
		}
		if first, last := rbs[0].FirstOffset, rbs[0].FirstOffset+int64(rbs[0].LastOffsetDelta); off < first || off > last {
			t.Fatalf("read %d returned batch [%d, %d]", off, first, last)
		}
		if rbs[0].PartitionLeaderEpoch != 3 {
			t.Fatalf("epoch %d", rbs[0].PartitionLeaderEpoch)
		}
		// A big read returns whole batches of one segment, contiguous.
		res, err := l.Read(off, 1<<20, math.MaxInt64, false)
		if err != nil {
			t.Fatal(err)
		}
		b, _ = l.ReadBytes(off, 1<<20, math.MaxInt64, false)
		rbs = decodeBatches(t, b)
		if len(b) != res.Size || rbs[0].FirstOffset != res.FirstOffset {
			t.Fatalf("read %d: %d bytes from %d, result %+v", off, len(b), rbs[0].FirstOffset, res)
		}
		exp := rbs[0].FirstOffset
		for _, rb := range rbs {
			if rb.FirstOffset != exp {
				t.Fatalf("read %d: batch at %d, want %d", off, rb.FirstOffset, exp)
			}
			exp += int64(rb.LastOffsetDelta) + 1
		}
		if exp != res.NextOffset {
			t.Fatalf("read %d: NextOffset %d, batches end at %d", off, res.NextOffset, exp)
		}
	}
	// Out of range on both sides; the LEO itself is empty.
	if _, err := l.Read(next+1, 100, math.MaxInt64, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past LEO: %v", err)
	}
	if res, err := l.Read(next, 100, math.MaxInt64, true); err != nil || res.Size != 0 || res.NextOffset != next {
		t.Fatalf("read at LEO: %+v %v", res, err)
	}
}

func TestReadLimits(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig(newFakeClock()))
	defer l.Close()
	var sizes []int
	for i := 0; i < 5; i++ {
		b := buildBatch(t, batchSpec{records: 2, firstTs: 10, valueSize: 100})
		sizes = append(sizes, len(b))
		mustAppend(t, l, b, 0)
	}
	// maxBytes cuts at whole batches.
	res, err := l.Read(0, sizes[0]+sizes[1]+10, math.MaxInt64, false)
	if err != nil || res.Size != sizes[0]+sizes[1] || res.NextOffset != 4 {
		t.Fatalf("maxBytes: %+v %v", res, err)
	}
	// Too small and not minOneBatch: nothing.
	res, err = l.Read(0, 10, math.MaxInt64, false)
	if err != nil || res.Size != 0 || res.File != nil || res.NextOffset != 0 {
		t.Fatalf("small maxBytes: %+v %v", res, err)
	}
	// minOneBatch: exactly one batch (KIP-74).
	res, err = l.Read(3, 10, math.MaxInt64, true)
	if err != nil || res.Size != sizes[1] || res.FirstOffset != 2 || res.NextOffset != 4 {
		t.Fatalf("minOneBatch: %+v %v", res, err)
	}
	// maxOffset (high watermark) is exclusive and cuts before a batch holding it.
	res, err = l.Read(0, 1<<20, 5, false)
	if err != nil || res.NextOffset != 4 {
		t.Fatalf("maxOffset 5: %+v %v", res, err)
	}
	res, err = l.Read(4, 1<<20, 4, true)
	if err != nil || res.Size != 0 {
		t.Fatalf("read at HW: %+v %v", res, err)
	}
}

func TestFollowerAppend(t *testing.T) {
	dir := t.TempDir()
	leader := openLog(t, dir+"/leader", testConfig(newFakeClock()))
	defer leader.Close()
	follower := openLog(t, dir+"/follower", testConfig(newFakeClock()))
	defer follower.Close()
	for i := 0; i < 4; i++ {
		mustAppend(t, leader, buildBatch(t, batchSpec{records: 3, firstTs: int64(i)}), int32(i/2))
	}
	b := readAll(t, leader, 0)
	// Not starting at the LEO: rejected, nothing written.
	if _, err := follower.AppendAsFollower(b[len(b)/2:]); err == nil {
		t.Fatal("torn input accepted")
	}
	rbs := decodeBatches(t, b)
	second := int(rbs[0].Length) + 12
	if _, err := follower.AppendAsFollower(b[second:]); !errors.Is(err, ErrNonContiguous) {
		t.Fatalf("gap: %v", err)
	}
	info, err := follower.AppendAsFollower(b)
	if err != nil || info.FirstOffset != 0 || info.LastOffset != 11 || len(info.Batches) != 4 {
		t.Fatalf("follower append: %+v %v", info, err)
	}
	if got := readAll(t, follower, 0); string(got) != string(b) {
		t.Fatal("follower bytes differ from the leader's")
	}
	if e := follower.Epochs(); len(e) != 2 || e[0] != (EpochEntry{Epoch: 0, StartOffset: 0}) || e[1] != (EpochEntry{Epoch: 1, StartOffset: 6}) {
		t.Fatalf("follower epochs %v", e)
	}
}

func TestAppendInfoProducerFields(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig(newFakeClock()))
	defer l.Close()
	b := append(buildBatch(t, batchSpec{records: 3, firstTs: 50, pid: 7, pepoch: 2, seq: 10}),
		buildBatch(t, batchSpec{records: 2, firstTs: 40, pid: 7, pepoch: 2, seq: 13})...)
	info := mustAppend(t, l, b, 1)
	want := []BatchInfo{
		{BaseOffset: 0, LastOffset: 2, ProducerID: 7, ProducerEpoch: 2, BaseSequence: 10, LastSequence: 12},
		{BaseOffset: 3, LastOffset: 4, ProducerID: 7, ProducerEpoch: 2, BaseSequence: 13, LastSequence: 14},
	}
	if len(info.Batches) != 2 || info.Batches[0] != want[0] || info.Batches[1] != want[1] {
		t.Fatalf("batches %+v", info.Batches)
	}
	if info.MaxTimestamp != testTs0+52 || info.OffsetOfMaxTimestamp != 2 {
		t.Fatalf("max timestamp %d at %d", info.MaxTimestamp, info.OffsetOfMaxTimestamp)
	}
}
