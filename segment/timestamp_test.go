package segment

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/shale-io/shale/segment/vfs"
)

func TestOffsetForTimestamp(t *testing.T) {
	cfg := testConfig(newFakeClock())
	cfg.IndexIntervalBytes = 100
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	// Offsets 0-3: ts 10,12,11,13; 4-6 gzip: ts 20,25,22; 7-8 LogAppendTime 30;
	// then a roll; 9-10: ts 5, 40 (an old timestamp after newer ones).
	mustAppend(t, l, buildBatch(t, batchSpec{records: 4, firstTs: 10, tsDeltas: []int64{0, 2, 1, 3}}), 0)
	mustAppend(t, l, buildBatch(t, batchSpec{records: 3, firstTs: 20, tsDeltas: []int64{0, 5, 2}, gzip: true}), 0)
	mustAppend(t, l, buildBatch(t, batchSpec{records: 2, firstTs: 30, tsDeltas: []int64{0, 0}, appendTs: true}), 0)
	l.Roll()
	mustAppend(t, l, buildBatch(t, batchSpec{records: 2, firstTs: 5, tsDeltas: []int64{0, 35}}), 0)
	for _, c := range []struct {
		ts, off, gotTs int64
		ok             bool
	}{
		{0, 0, 10, true},
		{10, 0, 10, true},
		{11, 1, 12, true},
		{13, 3, 13, true},
		{14, 4, 20, true},
		{21, 5, 25, true}, // inside the compressed batch
		{23, 5, 25, true},
		{26, 7, 30, true}, // LogAppendTime: every record has the batch time
		{31, 10, 40, true},
		{40, 10, 40, true},
		{41, -1, -1, false},
	} {
		off, ts, ok, err := l.OffsetForTimestamp(testTs0 + c.ts)
		if err != nil || ok != c.ok || off != c.off || (ok && ts != testTs0+c.gotTs) {
			t.Errorf("ts %d: (%d, %d, %v, %v), want (%d, %d, %v)", c.ts, off, ts-testTs0, ok, err, c.off, c.gotTs, c.ok)
		}
	}
	off, ts, ok, err := l.MaxTimestampOffset()
	if err != nil || !ok || off != 10 || ts != testTs0+40 {
		t.Fatalf("max timestamp: %d %d %v %v", off, ts, ok, err)
	}
	// After retention, offsets below the log start are never answered.
	if _, err := l.DeleteSegmentsBefore(9); err != nil {
		t.Fatal(err)
	}
	if off, _, ok, _ := l.OffsetForTimestamp(testTs0); !ok || off != 9 {
		t.Fatalf("after retention: %d %v", off, ok)
	}
}

func TestEpochCache(t *testing.T) {
	c := epochCache{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 10}, {Epoch: 4, StartOffset: 25}}
	for _, tc := range []struct {
		req     int32
		epoch   int32
		endOff  int64
		comment string
	}{
		{4, 4, 100, "latest epoch: LEO"},
		{3, 3, 25, "next epoch's start"},
		{2, 1, 10, "unknown epoch between: largest below"},
		{0, 0, 0, "below all: requested epoch, first start"},
		{5, -1, -1, "above all: undefined"},
		{-1, -1, -1, "undefined request"},
	} {
		e, o := c.endOffsetFor(tc.req, 100)
		if e != tc.epoch || o != tc.endOff {
			t.Errorf("%s: epoch %d -> (%d, %d), want (%d, %d)", tc.comment, tc.req, e, o, tc.epoch, tc.endOff)
		}
	}
	if e, o := (epochCache{}).endOffsetFor(0, 5); e != -1 || o != -1 {
		t.Errorf("empty cache: (%d, %d)", e, o)
	}
	d := append(epochCache(nil), c...)
	if !d.assign(5, 30) || d.assign(5, 40) || d.assign(2, 50) {
		t.Fatal("assign: only newer epochs are added")
	}
	d.truncateFromEnd(25)
	if len(d) != 2 || d[1] != (EpochEntry{Epoch: 3, StartOffset: 10}) {
		t.Fatalf("truncateFromEnd: %v", d)
	}
	d = append(epochCache(nil), c...)
	d.truncateFromStart(12)
	if len(d) != 2 || d[0] != (EpochEntry{Epoch: 3, StartOffset: 12}) || d[1] != (EpochEntry{Epoch: 4, StartOffset: 25}) {
		t.Fatalf("truncateFromStart: %v", d)
	}
	parsed, err := parseEpochCheckpoint(c.encode())
	if err != nil || len(parsed) != 3 || parsed[2] != c[2] {
		t.Fatalf("round trip: %v %v", parsed, err)
	}
	for _, bad := range []string{"", "1\n0\n", "0\n2\n1 0\n", "0\n1\n1 x\n", "0\n2\n3 0\n1 5\n", "0\n-1\n"} {
		if _, err := parseEpochCheckpoint([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	// Through the Log: leader appends with rising epochs, OffsetForLeaderEpoch.
	l := openLog(t, t.TempDir(), testConfig(newFakeClock()))
	defer l.Close()
	for i, ep := range []int32{2, 2, 5, 7, 7} {
		_ = i
		mustAppend(t, l, buildBatch(t, batchSpec{records: 2}), ep)
	}
	if e := l.Epochs(); len(e) != 3 || e[1] != (EpochEntry{Epoch: 5, StartOffset: 4}) || e[2] != (EpochEntry{Epoch: 7, StartOffset: 6}) {
		t.Fatalf("epochs %v", e)
	}
	if e, o := l.EndOffsetForEpoch(6); e != 5 || o != 6 {
		t.Fatalf("EndOffsetForEpoch(6) = %d %d", e, o)
	}
	if e, o := l.EndOffsetForEpoch(7); e != 7 || o != 10 {
		t.Fatalf("EndOffsetForEpoch(7) = %d %d", e, o)
	}
}

func TestFlushPolicy(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig(clock)
	cfg.FlushMessages = 5
	cfg.FlushInterval = time.Second
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	defer l.Close()
	mustAppend(t, l, buildBatch(t, batchSpec{records: 3}), 0)
	if l.RecoveryPoint() != 0 {
		t.Fatalf("flushed early: %d", l.RecoveryPoint())
	}
	mustAppend(t, l, buildBatch(t, batchSpec{records: 2}), 0)
	if l.RecoveryPoint() != 5 {
		t.Fatalf("flush.messages: recovery point %d", l.RecoveryPoint())
	}
	if v, ok := readOffsetFile(vfs.Default, dir, recoveryPointFile); !ok || v != 5 {
		t.Fatalf("recovery-point file %d %v", v, ok)
	}
	mustAppend(t, l, buildBatch(t, batchSpec{records: 1}), 0)
	clock.Advance(999 * time.Millisecond)
	l.MaybeFlush()
	if l.RecoveryPoint() != 5 {
		t.Fatal("flush.ms flushed early")
	}
	clock.Advance(time.Millisecond)
	l.MaybeFlush()
	if l.RecoveryPoint() != 6 {
		t.Fatalf("flush.ms: recovery point %d", l.RecoveryPoint())
	}
}

// TestConcurrentReaders runs readers at random offsets while one appender
// writes and rolls and retention deletes; run with -race.
func TestConcurrentReaders(t *testing.T) {
	cfg := testConfig(newFakeClock())
	cfg.SegmentBytes = 8 << 10
	cfg.IndexIntervalBytes = 512
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 4)
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			for i := int64(0); ; i++ {
				select {
				case <-done:
					return
				default:
				}
				start, end := l.LogStartOffset(), l.LogEndOffset()
				if end == start {
					continue
				}
				off := start + (i*7919+seed)%(end-start)
				b, err := l.ReadBytes(off, 4096, math.MaxInt64, true)
				if err != nil {
					if l.LogStartOffset() > off {
						continue // retention passed it meanwhile
					}
					errs <- err
					return
				}
				if len(b) == 0 {
					errs <- errNoData
					return
				}
			}
		}(int64(r))
	}
	for i := 0; i < 600; i++ {
		mustAppend(t, l, buildBatch(t, batchSpec{records: 2, firstTs: int64(i), valueSize: 100}), int32(i/100))
		if i%100 == 99 {
			if _, err := l.DeleteSegmentsBefore(l.LogEndOffset() / 2); err != nil {
				t.Error(err)
			}
		}
	}
	close(done)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// TestMaybeFlushIdleFastPath: a log with nothing due (no flush.ms, no
// deleted segment waiting) answers MaybeFlush without its writer lock, and
// each thing that gives it work again ends that: flush.ms set by SetConfig,
// a segment scheduled for deletion, Close.
func TestMaybeFlushIdleFastPath(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig(clock)
	cfg.FlushInterval = 0
	cfg.SegmentBytes = 1 << 10
	l := openLog(t, t.TempDir(), cfg)
	if err := l.MaybeFlush(); err != nil || !l.flushIdle.Load() {
		t.Fatalf("idle log: MaybeFlush %v, idle %v", err, l.flushIdle.Load())
	}
	// Held writer lock: an idle MaybeFlush must not wait for it.
	l.writer.Lock()
	done := make(chan error, 1)
	go func() { done <- l.MaybeFlush() }()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	l.writer.Unlock()

	mustAppend(t, l, buildBatch(t, batchSpec{records: 3}), 0)
	set := cfg
	set.FlushInterval = time.Second
	if err := l.SetConfig(set); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if err := l.MaybeFlush(); err != nil || l.RecoveryPoint() != 3 {
		t.Fatalf("flush.ms after SetConfig: %v, recovery point %d", err, l.RecoveryPoint())
	}
	if l.flushIdle.Load() {
		t.Fatal("idle with flush.ms set")
	}
	if err := l.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	l.MaybeFlush()
	if !l.flushIdle.Load() {
		t.Fatal("not idle again without flush.ms")
	}

	// A deleted segment makes it due again, and is removed after
	// file.delete.delay.
	for range 20 {
		mustAppend(t, l, buildBatch(t, batchSpec{records: 4}), 0)
	}
	if len(l.Segments()) < 2 {
		t.Fatalf("no roll: %d segments", len(l.Segments()))
	}
	if n, err := l.DeleteSegmentsBefore(l.Segments()[1].BaseOffset); err != nil || n != 1 {
		t.Fatalf("delete: %d %v", n, err)
	}
	if l.flushIdle.Load() || l.PendingDeletes() != 1 {
		t.Fatalf("after a deletion: idle %v, pending %d", l.flushIdle.Load(), l.PendingDeletes())
	}
	clock.Advance(cfg.FileDeleteDelay)
	if err := l.MaybeFlush(); err != nil || l.PendingDeletes() != 0 || !l.flushIdle.Load() {
		t.Fatalf("after file.delete.delay: %v, pending %d, idle %v", err, l.PendingDeletes(), l.flushIdle.Load())
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.MaybeFlush(); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed log: MaybeFlush %v", err)
	}
}

// TestAnyFlushDueCountsBusyLogs: the process-wide count behind AnyFlushDue
// follows each log from open (busy until its first MaybeFlush) through
// flush.ms, a deleted segment waiting, and Close (counted out once, busy
// or idle).
func TestAnyFlushDueCountsBusyLogs(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig(clock)
	cfg.FlushInterval = 0
	cfg.SegmentBytes = 1 << 10
	base := busyLogs.Load()
	want := func(what string, n int64) {
		t.Helper()
		if got := busyLogs.Load() - base; got != n {
			t.Fatalf("%s: %d busy logs, want %d", what, got, n)
		}
		if n > 0 && !AnyFlushDue() {
			t.Fatalf("%s: AnyFlushDue false with %d busy", what, n)
		}
	}
	a := openLog(t, t.TempDir(), cfg)
	b := openLog(t, t.TempDir(), cfg)
	want("two new logs", 2)
	a.MaybeFlush()
	b.MaybeFlush()
	want("after their first pass", 0)

	set := cfg
	set.FlushInterval = time.Second
	if err := a.SetConfig(set); err != nil {
		t.Fatal(err)
	}
	want("flush.ms set", 1)
	a.MaybeFlush()
	want("flush.ms set, after a pass", 1)
	if err := a.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	a.MaybeFlush()
	want("flush.ms unset, after a pass", 0)

	for range 20 {
		mustAppend(t, b, buildBatch(t, batchSpec{records: 4}), 0)
	}
	if n, err := b.DeleteSegmentsBefore(b.Segments()[1].BaseOffset); err != nil || n != 1 {
		t.Fatalf("delete: %d %v", n, err)
	}
	want("a deleted segment waiting", 1)
	clock.Advance(cfg.FileDeleteDelay)
	b.MaybeFlush()
	want("after file.delete.delay", 0)

	if err := a.SetConfig(set); err != nil {
		t.Fatal(err)
	}
	want("busy again", 1)
	for range 2 {
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		want("a busy log closed", 0)
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		want("an idle log closed", 0)
	}
	a.SetConfig(cfg)
	want("settings of a closed log", 0)
}
