package segment

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/shale-io/shale/segment/batch"
)

// checkedOf parses b into checked batches or fails the test.
func checkedOf(t *testing.T, b []byte) []batch.Checked {
	t.Helper()
	bs, err := batch.ParseAll(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// headersMatchBytes fails unless each batch's handed-down header is what
// ParseHeader reads from its bytes.
func headersMatchBytes(t *testing.T, what string, bs []batch.Checked) {
	t.Helper()
	for i := range bs {
		h, err := batch.ParseHeader(bs[i].Raw)
		if err != nil || h != bs[i].Header {
			t.Fatalf("%s: batch %d: header\n%+v\nparsed from its bytes\n%+v (%v)", what, i, bs[i].Header, h, err)
		}
	}
}

// TestAppendCheckedAsAppend pins that AppendChecked writes and answers what
// Append does with the same batches (the leader path hands down parsed
// batches), across a roll, and leaves each header equal to its stamped bytes.
func TestAppendCheckedAsAppend(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(newFakeClock())
	cfg.SegmentBytes = 1200 // rolls every few batches
	plain := openLog(t, dir+"/plain", cfg)
	defer plain.Close()
	checked := openLog(t, dir+"/checked", cfg)
	defer checked.Close()
	for i := range 12 {
		sp := batchSpec{records: 1 + i%4, firstTs: int64(i), valueSize: 200, pid: 7, pepoch: 1, seq: int32(4 * i), gzip: i%3 == 0}
		if i == 5 {
			// two batches in one append
			b := append(buildBatch(t, sp), buildBatch(t, batchSpec{records: 2, firstTs: 1})...)
			bs := checkedOf(t, slices.Clone(b))
			want := mustAppend(t, plain, b, int32(i/4))
			got, err := checked.AppendChecked(bs, int32(i/4))
			if err != nil || !equalInfo(got, want) {
				t.Fatalf("append %d: AppendChecked %+v %v, Append %+v", i, got, err, want)
			}
			headersMatchBytes(t, "two batches", bs)
			continue
		}
		b := buildBatch(t, sp)
		bs := checkedOf(t, slices.Clone(b))
		want := mustAppend(t, plain, b, int32(i/4))
		got, err := checked.AppendChecked(bs, int32(i/4))
		if err != nil || !equalInfo(got, want) {
			t.Fatalf("append %d: AppendChecked %+v %v, Append %+v", i, got, err, want)
		}
		headersMatchBytes(t, "append", bs)
		if !bytes.Equal(bs[0].Raw, b) {
			t.Fatalf("append %d: AppendChecked stamped other bytes than Append", i)
		}
	}
	if got, want := segmentSpans(checked), segmentSpans(plain); len(got) < 3 || !slices.Equal(got, want) {
		t.Fatalf("segments %v, Append's %v", got, want)
	}
	if !bytes.Equal(readAll(t, checked, 0), readAll(t, plain, 0)) {
		t.Fatal("AppendChecked's log differs from Append's")
	}
	if !slices.Equal(checked.Epochs(), plain.Epochs()) {
		t.Fatalf("epochs %v, Append's %v", checked.Epochs(), plain.Epochs())
	}

	// A batch whose header disagrees with its bytes' size is refused
	// before anything is written.
	bs := checkedOf(t, buildBatch(t, batchSpec{records: 2}))
	bs[0].Raw = bs[0].Raw[:len(bs[0].Raw)-1]
	leo := checked.LogEndOffset()
	if _, err := checked.AppendChecked(bs, 3); !errors.Is(err, batch.ErrCorrupt) || checked.LogEndOffset() != leo {
		t.Fatalf("a short checked batch: %v, log end %d -> %d", err, leo, checked.LogEndOffset())
	}
}

// TestAppendCheckedAsFollower pins that AppendCheckedAsFollower writes
// what AppendAsFollower does, refuses what it refuses, and changes no batch.
func TestAppendCheckedAsFollower(t *testing.T) {
	dir := t.TempDir()
	leader := openLog(t, dir+"/leader", testConfig(newFakeClock()))
	defer leader.Close()
	follower := openLog(t, dir+"/follower", testConfig(newFakeClock()))
	defer follower.Close()
	for i := range 4 {
		mustAppend(t, leader, buildBatch(t, batchSpec{records: 3, firstTs: int64(i), gzip: i == 2}), int32(i/2))
	}
	b := readAll(t, leader, 0)
	bs := checkedOf(t, b)
	if _, err := follower.AppendCheckedAsFollower(bs[1:]); !errors.Is(err, ErrNonContiguous) || follower.LogEndOffset() != 0 {
		t.Fatalf("gap: %v", err)
	}
	// The byte path still checks each batch before parsing the next: a gap
	// before a malformed batch is reported as the gap.
	gapThenJunk := append(slices.Clone(bs[1].Raw), make([]byte, batch.HeaderSize)...)
	if _, err := follower.AppendAsFollower(gapThenJunk); !errors.Is(err, ErrNonContiguous) || follower.LogEndOffset() != 0 {
		t.Fatalf("gap, then a malformed batch: %v", err)
	}
	if _, err := follower.AppendAsFollower(append(slices.Clone(bs[0].Raw), make([]byte, batch.HeaderSize)...)); !errors.Is(err, batch.ErrMagic) || follower.LogEndOffset() != 0 {
		t.Fatalf("a batch, then a malformed one: %v", err)
	}
	info, err := follower.AppendCheckedAsFollower(bs)
	if err != nil || info.FirstOffset != 0 || info.LastOffset != 11 || len(info.Batches) != 4 {
		t.Fatalf("follower append: %+v %v", info, err)
	}
	headersMatchBytes(t, "follower", bs)
	if got := readAll(t, follower, 0); !bytes.Equal(got, b) {
		t.Fatal("follower bytes differ from the leader's")
	}
	if !slices.Equal(follower.Epochs(), leader.Epochs()) {
		t.Fatalf("follower epochs %v, leader's %v", follower.Epochs(), leader.Epochs())
	}
}

func equalInfo(a, b AppendInfo) bool {
	return a.FirstOffset == b.FirstOffset && a.LastOffset == b.LastOffset && a.MaxTimestamp == b.MaxTimestamp &&
		a.OffsetOfMaxTimestamp == b.OffsetOfMaxTimestamp && slices.Equal(a.Batches, b.Batches)
}

// segmentSpans lists each segment's base offset, next offset and size.
func segmentSpans(l *Log) [][3]int64 {
	var out [][3]int64
	for _, s := range l.Segments() {
		out = append(out, [3]int64{s.BaseOffset, s.NextOffset, s.Size})
	}
	return out
}
