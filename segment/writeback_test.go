package segment

import (
	"sync"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
)

// wbRange is one range the flusher started writing back.
type wbRange struct{ base, from, to int64 }

// recordWritebacks installs a writebackHook that records each range; a
// cleanup removes it.
func recordWritebacks(t *testing.T) (get func() []wbRange) {
	var mu sync.Mutex
	var got []wbRange
	writebackHook = func(base, from, to int64) {
		mu.Lock()
		got = append(got, wbRange{base, from, to})
		mu.Unlock()
	}
	t.Cleanup(func() { writebackHook = nil })
	return func() []wbRange {
		mu.Lock()
		defer mu.Unlock()
		return append([]wbRange(nil), got...)
	}
}

// TestWritebackCoversAppendedPages appends well past WritebackBytes and
// checks that the flusher asks for writeback of the appended whole pages,
// in order, without gaps, never past what was appended, per segment across
// rolls, and of the active segment up to within WritebackBytes of its end.
func TestWritebackCoversAppendedPages(t *testing.T) {
	get := recordWritebacks(t)
	cfg := testConfig(newFakeClock())
	cfg.WritebackBytes = 64 << 10
	cfg.SegmentBytes = 1 << 20
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()

	for range 300 {
		mustAppend(t, l, buildBatch(t, batchSpec{records: 3, valueSize: 1500}), 0)
	}
	segs := l.Segments()
	if len(segs) < 2 {
		t.Fatalf("%d segments: the test meant to cross a roll", len(segs))
	}
	last := segs[len(segs)-1]
	// Wait (bounded) for the flusher to take the writer's last request.
	var got []wbRange
	if err := proctest.Poll(5*time.Second, time.Millisecond, func() bool {
		got = get()
		l.mu.RLock()
		want := l.w.wbFrom
		l.mu.RUnlock()
		return len(got) > 0 && got[len(got)-1].base == last.BaseOffset && got[len(got)-1].to == want
	}); err != nil {
		t.Fatalf("the flusher did not start the last requested writeback: %v; got %v", err, got)
	}
	ends := map[int64]int64{} // segment base -> end of the last range
	for _, r := range got {
		if r.from%pageSize != 0 || r.to%pageSize != 0 || r.to <= r.from {
			t.Fatalf("range %+v is not whole pages", r)
		}
		if r.from != ends[r.base] {
			t.Fatalf("range %+v does not start where the segment's previous one ended (%d)", r, ends[r.base])
		}
		ends[r.base] = r.to
	}
	for _, s := range segs {
		end, ok := ends[s.BaseOffset]
		if !ok {
			t.Fatalf("segment %d never written back", s.BaseOffset)
		}
		if end > s.Size {
			t.Fatalf("segment %d written back to %d, past its size %d", s.BaseOffset, end, s.Size)
		}
		// A rolled segment's last request may be replaced by the new
		// segment's before the flusher takes it: the flusher fsyncs the
		// rolled segment whole anyway, so no coverage is asked of it.
	}
	if last.Size-ends[last.BaseOffset] >= cfg.WritebackBytes+pageSize {
		t.Fatalf("active segment: %d of %d bytes not asked for", last.Size-ends[last.BaseOffset], last.Size)
	}
}

// TestWritebackRestartsAfterTruncate truncates the active segment below
// the written-back position: later requests start over from the start of
// the segment, and none names bytes past the segment's size.
func TestWritebackRestartsAfterTruncate(t *testing.T) {
	get := recordWritebacks(t)
	cfg := testConfig(newFakeClock())
	cfg.WritebackBytes = 16 << 10
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	for range 40 {
		mustAppend(t, l, buildBatch(t, batchSpec{records: 2, valueSize: 1000}), 0)
	}
	if err := l.Truncate(5); err != nil {
		t.Fatal(err)
	}
	l.mu.RLock()
	size := l.active().size
	l.mu.RUnlock()
	n := len(get())
	for range 40 {
		mustAppend(t, l, buildBatch(t, batchSpec{records: 2, valueSize: 1000}), 0)
	}
	var got []wbRange
	if err := proctest.Poll(5*time.Second, time.Millisecond, func() bool { got = get(); return len(got) > n }); err != nil {
		t.Fatalf("no writeback after the truncation: %v", err)
	}
	if r := got[n]; r.from != 0 {
		t.Fatalf("first range after truncating to %d bytes: %+v, want it to start over at 0", size, r)
	}
}

// TestWritebackOff checks that WritebackBytes 0 asks for nothing.
func TestWritebackOff(t *testing.T) {
	cfg := testConfig(newFakeClock())
	cfg.WritebackBytes = 0
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	for range 100 {
		mustAppend(t, l, buildBatch(t, batchSpec{records: 2, valueSize: 1000}), 0)
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.w.writebacks != 0 {
		t.Fatalf("%d writeback requests with WritebackBytes 0", l.w.writebacks)
	}
}
