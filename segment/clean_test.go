package segment

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestReplaceSegment swaps a closed segment for the same batches (as a
// cleaner that dropped nothing would), checks reads, rejects a cleaned
// segment that does not cover the same offsets, and completes a swap that
// a crash interrupted after the old files stepped aside.
func TestReplaceSegment(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(newFakeClock())
	l := openLog(t, dir, cfg)
	b := buildBatch(t, batchSpec{records: 3, valueSize: 10})
	for i := 0; i < 4; i++ {
		mustAppend(t, l, append([]byte(nil), b...), 0)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, append([]byte(nil), b...), 0)
	before := readAll(t, l, 0)
	seg0, err := l.ReadBytes(0, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.ReplaceSegment(0, seg0[:len(seg0)-len(b)]); !errors.Is(err, ErrNonContiguous) {
		t.Fatalf("a cleaned segment short of the offsets it replaces: %v", err)
	}
	if err := l.ReplaceSegment(12, nil); err == nil {
		t.Fatal("the active segment was replaced")
	}
	if err := l.ReplaceSegment(0, seg0); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l, 0); !bytes.Equal(got, before) {
		t.Fatal("log bytes changed by a no-op replacement")
	}
	// Crash after the swap file was committed and the old .log stepped aside.
	l.closeForCrashTest()
	logPath := filepath.Join(dir, fileName(0, logSuffix))
	if err := os.Rename(logPath, logPath+swapSuffix); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	defer l.Close()
	if got := readAll(t, l, 0); !bytes.Equal(got, before) {
		t.Fatal("the interrupted swap was not completed")
	}
}
