package segment

import (
	"path/filepath"
	"runtime"
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
	base := runtime.NumGoroutine()
	ls := make([]*Log, logs)
	for i := range ls {
		ls[i] = openLog(t, filepath.Join(dir, "p", string(rune('a'+i%26)), string(rune('a'+i/26))), cfg)
		mustAppend(t, ls[i], buildBatch(t, batchSpec{records: 3, valueSize: 10}), 0)
	}
	if n := runtime.NumGoroutine() - base; n > 0 {
		t.Fatalf("%d logs with one append each hold %d more goroutines", logs, n)
	}
	for _, l := range ls[1:] {
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range ls[1:] {
		waitRecoveryPoint(t, l, 3) // each roll's flusher synced its segment
	}
	if err := proctest.Poll(time.Minute, time.Millisecond, func() bool { return runtime.NumGoroutine() <= base }); err != nil {
		t.Fatalf("%d goroutines more once every rolled segment is synced: %v", runtime.NumGoroutine()-base, err)
	}
	entered, release := blockSyncs(t)
	if err := ls[0].Roll(); err != nil {
		t.Fatal(err)
	}
	waitEntered(t, entered, 0) // the roll started a flusher
	if n := runtime.NumGoroutine() - base; n != 1 {
		t.Fatalf("%d goroutines more while one flusher runs, want 1", n)
	}
	release()
	waitRecoveryPoint(t, ls[0], 3)
	if err := proctest.Poll(time.Minute, time.Millisecond, func() bool { return runtime.NumGoroutine() <= base }); err != nil {
		t.Fatalf("%d goroutines more after the last flush: %v", runtime.NumGoroutine()-base, err)
	}
	for _, l := range ls {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
