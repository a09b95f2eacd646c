package segment

import (
	"sync"
	"testing"
	"time"

	"github.com/shale-io/shale/segment/vfs"
)

// No fsync of any file, the directory included, is on the append path of a
// roll: with every fsync held, appends and rolls still complete (on ext4 an
// fsync there waits for the journal commit that the background fsync of
// the old segment starts, which made appends about twice as slow). Once the
// syncs are let go, the recovery point reaches the log end.
func TestRollAppendsWithEveryFsyncHeld(t *testing.T) {
	saved := fsync
	t.Cleanup(func() { fsync = saved })
	var hold sync.RWMutex // write-locked: every fsync waits
	fsync = func(f vfs.File) error {
		hold.RLock()
		defer hold.RUnlock()
		return saved(f)
	}
	dir := t.TempDir()
	l := openLog(t, dir, testConfig(newFakeClock()))
	b := buildBatch(t, batchSpec{records: 4})
	mustAppend(t, l, b, 0)

	hold.Lock()
	done := make(chan error, 1)
	go func() {
		for range 3 {
			if err := l.Roll(); err != nil {
				done <- err
				return
			}
			for range 5 {
				if _, err := l.Append(b, 0); err != nil {
					done <- err
					return
				}
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			hold.Unlock()
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		hold.Unlock()
		t.Fatal("a roll or an append waited for an fsync")
	}
	if rp := l.RecoveryPoint(); rp != 0 {
		hold.Unlock()
		t.Fatalf("recovery point %d with every fsync held", rp)
	}
	hold.Unlock()
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if rp, leo := l.RecoveryPoint(), l.LogEndOffset(); rp != leo || leo != 64 {
		t.Fatalf("after Flush: recovery point %d, log end %d, want both 64", rp, leo)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
