package segment

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
)

// TestIdleLogsStartNoGoroutine: an open log with no traffic costs no
// goroutine (issue 23: 1,000 idle partitions held 1,000 flushers), a roll
// starts the flusher, which syncs the rolled segment and returns, and Close
// of a log whose flusher is running waits for it.
func TestIdleLogsStartNoGoroutine(t *testing.T) {
	const logs = 200
	dir := t.TempDir()
	cfg := testConfig(newFakeClock())
	ls := make([]*Log, logs)
	for i := range ls {
		ls[i] = openLog(t, filepath.Join(dir, "p", string(rune('a'+i%26)), string(rune('a'+i/26))), cfg)
		mustAppend(t, ls[i], buildBatch(t, batchSpec{records: 3, valueSize: 10}), 0)
	}
	if n := flusherGoroutines(); n > 0 {
		t.Fatalf("%d logs with one append each run %d flushers", logs, n)
	}
	for _, l := range ls[1:] {
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range ls[1:] {
		waitRecoveryPoint(t, l, 3) // each roll's flusher synced its segment
	}
	if err := proctest.Poll(time.Minute, time.Millisecond, func() bool { return flusherGoroutines() == 0 }); err != nil {
		t.Fatalf("%d flushers still run once every rolled segment is synced: %v", flusherGoroutines(), err)
	}
	entered, release := blockSyncs(t)
	if err := ls[0].Roll(); err != nil {
		t.Fatal(err)
	}
	waitEntered(t, entered, 0) // the roll started a flusher
	if n := flusherGoroutines(); n != 1 {
		t.Fatalf("%d flushers run while one log's sync is blocked, want 1", n)
	}
	release()
	waitRecoveryPoint(t, ls[0], 3)
	if err := proctest.Poll(time.Minute, time.Millisecond, func() bool { return flusherGoroutines() == 0 }); err != nil {
		t.Fatalf("%d flushers still run after the last flush: %v", flusherGoroutines(), err)
	}
	for _, l := range ls {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// flusherGoroutines counts the goroutines running a Log's flusher, in this
// test binary. It looks at the goroutines' stacks, not at
// runtime.NumGoroutine: that counts every goroutine of the process, and the
// ones other tests leave winding down made the test flaky ("0 goroutines
// more while one flusher runs").
func flusherGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), "segment.(*Log).runFlusher(")
}
