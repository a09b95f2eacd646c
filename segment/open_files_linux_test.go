package segment

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// openFiles counts this process's open file descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestLogsHoldOneFilePerSegment: an open log holds one file descriptor per
// segment, its .log; the indexes are mapped and their files closed (issue
// 23: .log, .index and .timeindex held three fds per partition, and 10,000
// partitions did not fit under a 20,000 fd limit). A roll's trimmed
// indexes stay open only until the flusher has synced them, and a log
// reopened after an unclean stop (its indexes rebuilt) holds no more.
func TestLogsHoldOneFilePerSegment(t *testing.T) {
	const logs = 100
	dir := t.TempDir()
	cfg := testConfig(newFakeClock())
	before := openFiles(t)
	ls := make([]*Log, logs)
	for i := range ls {
		ls[i] = openLog(t, filepath.Join(dir, fmt.Sprint(i)), cfg)
		mustAppend(t, ls[i], buildBatch(t, batchSpec{records: 3, valueSize: 10}), 0)
	}
	if n := openFiles(t) - before; n != logs {
		t.Fatalf("%d logs of one segment hold %d fds, want %d", logs, n, logs)
	}
	// Half roll: two segments each, and the flusher syncs the rolled ones.
	for _, l := range ls[:logs/2] {
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, buildBatch(t, batchSpec{records: 2, valueSize: 10}), 0)
	}
	for _, l := range ls[:logs/2] {
		waitRecoveryPoint(t, l, 3)
	}
	if n, want := openFiles(t)-before, logs+logs/2; n != want {
		t.Fatalf("%d logs of %d segments hold %d fds once the rolled segments are synced, want %d", logs, want, n, want)
	}
	// Truncation back into the rolled segment remaps its indexes.
	for _, l := range ls[:logs/4] {
		if err := l.Truncate(1); err != nil {
			t.Fatal(err)
		}
	}
	if n, want := openFiles(t)-before, logs+logs/4; n != want {
		t.Fatalf("after truncating %d logs to one segment: %d fds, want %d", logs/4, n, want)
	}
	for _, l := range ls {
		l.closeForCrashTest()
	}
	if n := openFiles(t) - before; n != 0 {
		t.Fatalf("%d fds left open after every log stopped", n)
	}
	// Unclean reopen: the active segments' indexes are rebuilt from the log.
	for i := range ls {
		ls[i] = openLog(t, filepath.Join(dir, fmt.Sprint(i)), cfg)
	}
	if n, want := openFiles(t)-before, logs+logs/4; n != want {
		t.Fatalf("reopened after an unclean stop: %d fds, want %d", n, want)
	}
	for _, l := range ls {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := openFiles(t) - before; n != 0 {
		t.Fatalf("%d fds left open after Close", n)
	}
}
