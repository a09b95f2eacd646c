package segment

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"

	"github.com/shale-io/shale/segment/vfs"
)

// blockSyncs installs a bgSyncHook that reports each segment the flusher is
// about to fsync on entered and waits until release is closed. It must be
// called before the test's Open, and release called before the log's Close
// (which waits for the flusher). release is idempotent; a cleanup releases
// and removes the hook.
func blockSyncs(t *testing.T) (entered chan int64, release func()) {
	entered = make(chan int64, 64)
	gate := make(chan struct{})
	closed := false
	release = func() {
		if !closed {
			closed = true
			close(gate)
		}
	}
	bgSyncHook = func(base int64) {
		entered <- base
		<-gate
	}
	t.Cleanup(func() {
		release()
		bgSyncHook = nil
	})
	return entered, release
}

// waitEntered waits (bounded) for the flusher to enter the sync of base.
func waitEntered(t *testing.T, entered chan int64, base int64) {
	t.Helper()
	select {
	case got := <-entered:
		if got != base {
			t.Fatalf("flusher syncs segment %d, want %d", got, base)
		}
	case <-time.After(time.Minute):
		t.Fatalf("flusher never started on segment %d", base)
	}
}

// waitRecoveryPoint polls until the recovery point is want.
func waitRecoveryPoint(t *testing.T, l *Log, want int64) {
	t.Helper()
	if err := proctest.Poll(time.Minute, time.Millisecond, func() bool { return l.RecoveryPoint() == want }); err != nil {
		t.Fatalf("recovery point %d, want %d: %v", l.RecoveryPoint(), want, err)
	}
}

// recoveryPointOnDisk is the recovery-point file's value, -1 when missing.
func recoveryPointOnDisk(t *testing.T, dir string) int64 {
	v, ok := readOffsetFile(vfs.Default, dir, recoveryPointFile)
	if !ok {
		return -1
	}
	return v
}

// TestRollDoesNotWaitForFsync blocks the background fsync of a rolled
// segment and checks that appends and further rolls still complete, that
// the recovery point (in memory and on disk) stays below the unsynced
// segment, and that it moves to the rolled segments' end once the fsync
// returns.
func TestRollDoesNotWaitForFsync(t *testing.T) {
	entered, release := blockSyncs(t)
	dir := t.TempDir()
	l := openLog(t, dir, testConfig(newFakeClock()))
	defer func() { release(); l.Close() }() // Close waits for a blocked sync
	b := buildBatch(t, batchSpec{records: 4})
	mustAppend(t, l, b, 0)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	waitEntered(t, entered, 0)

	done := make(chan error, 1)
	go func() {
		for i := 0; i < 10; i++ {
			if _, err := l.Append(b, 0); err != nil {
				done <- err
				return
			}
		}
		if err := l.Roll(); err != nil {
			done <- err
			return
		}
		_, err := l.Append(b, 0)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("appends after a roll wait for the rolled segment's fsync")
	}
	if got := l.LogEndOffset(); got != 48 {
		t.Fatalf("LEO %d, want 48", got)
	}
	if rp := l.RecoveryPoint(); rp != 0 {
		t.Fatalf("recovery point %d while segment 0 is unsynced", rp)
	}
	if v := recoveryPointOnDisk(t, dir); v > 0 {
		t.Fatalf("recovery-point file %d while segment 0 is unsynced", v)
	}
	l.mu.RLock()
	synced := l.mu.segments[0].synced.Load()
	l.mu.RUnlock()
	if synced {
		t.Fatal("segment 0 marked synced before its fsync")
	}

	release()
	waitRecoveryPoint(t, l, 44) // both rolled segments: [0,4) and [4,44)
	if v := recoveryPointOnDisk(t, dir); v != 44 {
		t.Fatalf("recovery-point file %d, want 44", v)
	}
	l.mu.RLock()
	for _, s := range l.mu.segments[:2] {
		if !s.synced.Load() {
			t.Errorf("rolled segment %d not marked synced", s.base)
		}
	}
	l.mu.RUnlock()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if v := recoveryPointOnDisk(t, dir); v != 48 {
		t.Fatalf("recovery-point file after Close %d, want 48", v)
	}
}

// TestTruncateDuringBackgroundSync truncates into a rolled segment whose
// fsync is in progress: Truncate waits for that fsync (not appends for it),
// and the flusher must not raise the recovery point past the new end.
func TestTruncateDuringBackgroundSync(t *testing.T) {
	entered, release := blockSyncs(t)
	dir := t.TempDir()
	cfg := testConfig(newFakeClock())
	l := openLog(t, dir, cfg)
	defer func() { release(); l.Close() }() // Close waits for a blocked sync
	b := buildBatch(t, batchSpec{records: 2})
	for i := 0; i < 3; i++ {
		mustAppend(t, l, b, 0)
	}
	if err := l.Roll(); err != nil { // [0,6) queued
		t.Fatal(err)
	}
	waitEntered(t, entered, 0)
	mustAppend(t, l, b, 0)
	if err := l.Roll(); err != nil { // [6,8) queued behind it
		t.Fatal(err)
	}
	mustAppend(t, l, b, 0)

	done := make(chan error, 1)
	go func() { done <- l.Truncate(2) }()
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := l.LogEndOffset(); got != 2 {
		t.Fatalf("LEO %d after truncating to 2", got)
	}
	l.bg.mu.Lock()
	left := len(l.bg.pending)
	l.bg.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d flush jobs left for truncated segments", left)
	}
	if rp := l.RecoveryPoint(); rp > 2 {
		t.Fatalf("recovery point %d past the truncated end 2", rp)
	}
	if v := recoveryPointOnDisk(t, dir); v > 2 {
		t.Fatalf("recovery-point file %d past the truncated end 2", v)
	}
	// The truncated segment is active again and rolls and flushes anew.
	mustAppend(t, l, b, 0)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	waitRecoveryPoint(t, l, 4)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, dir, cfg)
	defer l2.Close()
	if got := l2.LogEndOffset(); got != 4 {
		t.Fatalf("reopened LEO %d, want 4", got)
	}
	if n := len(decodeBatches(t, readAll(t, l2, 0))); n != 2 {
		t.Fatalf("reopened log holds %d batches, want 2", n)
	}
}

// TestDeleteDuringBackgroundSync deletes (with no delay, so the files are
// closed at once) a rolled segment whose fsync is in progress.
func TestDeleteDuringBackgroundSync(t *testing.T) {
	entered, release := blockSyncs(t)
	dir := t.TempDir()
	cfg := testConfig(newFakeClock())
	cfg.FileDeleteDelay = 0
	l := openLog(t, dir, cfg)
	defer func() { release(); l.Close() }() // Close waits for a blocked sync
	b := buildBatch(t, batchSpec{records: 2})
	mustAppend(t, l, b, 0)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	waitEntered(t, entered, 0)
	mustAppend(t, l, b, 0)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, b, 0)

	done := make(chan error, 1)
	go func() {
		_, err := l.DeleteSegmentsBefore(2)
		done <- err
	}()
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := l.LogStartOffset(); got != 2 {
		t.Fatalf("log start %d, want 2", got)
	}
	waitRecoveryPoint(t, l, 4)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir + "/" + fileName(0, logSuffix)); !os.IsNotExist(err) {
		t.Fatalf("deleted segment's file: %v", err)
	}
}

const unflushedEnv = "SHALE_SEGMENT_UNFLUSHED_CHILD"

// TestUnflushedRollChild is the child of TestReopenRescansUnflushedRoll: it
// flushes to 6, rolls at 12 with the background fsync blocked for ever,
// appends to 18 and waits (bounded) to be killed.
func TestUnflushedRollChild(t *testing.T) {
	dir := os.Getenv(unflushedEnv)
	if dir == "" {
		t.Skip("only runs as TestReopenRescansUnflushedRoll's child process")
	}
	bgSyncHook = func(int64) { <-make(chan struct{}) }
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(1)
	}
	l, err := Open(dir, testConfig(newFakeClock()))
	if err != nil {
		fail(err)
	}
	b := buildBatch(t, batchSpec{records: 2})
	for i := 0; i < 9; i++ {
		if i == 3 {
			if err := l.Flush(); err != nil {
				fail(err)
			}
		}
		if i == 6 {
			if err := l.Roll(); err != nil {
				fail(err)
			}
		}
		if _, err := l.Append(b, 0); err != nil {
			fail(err)
		}
	}
	fmt.Println("ready", l.RecoveryPoint(), l.LogEndOffset())
	<-time.After(time.Minute)
}

// TestReopenRescansUnflushedRoll kills a process whose rolled segment was
// never fsynced and checks that the recovery point on disk stayed below that
// segment, so the next Open re-reads it as well as the active one.
func TestReopenRescansUnflushedRoll(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	dir := t.TempDir()
	cmd, lines := startChild(t, "TestUnflushedRollChild", unflushedEnv, dir)
	var ready string
	for line := range lines {
		if strings.HasPrefix(line, "ready") || strings.HasPrefix(line, "error") {
			ready = line
			break
		}
	}
	killChild(cmd, lines)
	if ready != "ready 6 18" {
		t.Fatalf("child said %q, want %q", ready, "ready 6 18")
	}
	if v := recoveryPointOnDisk(t, dir); v != 6 {
		t.Fatalf("recovery-point file %d after the kill, want 6 (segment 0 was never synced)", v)
	}
	l := openLog(t, dir, testConfig(newFakeClock()))
	defer l.Close()
	if n := l.scanCount(); n != 2 {
		t.Fatalf("reopen re-read %d segments, want 2 (the unsynced rolled one and the active one)", n)
	}
	if got := l.LogEndOffset(); got != 18 {
		t.Fatalf("LEO %d, want 18", got)
	}
	if n := len(decodeBatches(t, readAll(t, l, 0))); n != 9 {
		t.Fatalf("%d batches, want 9", n)
	}
	if rp := l.RecoveryPoint(); rp != 18 {
		t.Fatalf("recovery point after recovery %d, want 18", rp)
	}
}
