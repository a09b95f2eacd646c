package partition

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/shale-io/shale/segment/vfs"
)

// SnapshotAt gives the roll's snapshot, or rebuilds a lost or torn one
// (the roll writes it without an fsync) to the same bytes from an older
// snapshot and the local batches between.
func TestSnapshotAtRebuildsALostRollSnapshot(t *testing.T) {
	r := openTest(t, t.TempDir(), map[string]string{"segment.bytes": "500"}, nil)
	defer r.Close()
	now := time.Now().UnixMilli()
	for pid := int64(1); pid <= 20; pid++ {
		if _, err := r.AppendLeader(build(t, idem(pid, 0, now), 5)); err != nil {
			t.Fatal(err)
		}
	}
	snaps := listSnapshots(vfs.Default, r.dir)
	if len(snaps) < 4 {
		t.Fatalf("snapshots at %v: the test needs several rolls", snaps)
	}
	at := snaps[2]
	want, err := os.ReadFile(snapshotName(r.dir, at))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok, err := r.SnapshotAt(at); err != nil || !ok || !bytes.Equal(got, want) {
		t.Fatalf("intact snapshot at %d: ok %v err %v, equal %v", at, ok, err, bytes.Equal(got, want))
	}
	for name, lose := range map[string]func(){
		"lost": func() { os.Remove(snapshotName(r.dir, at)) },
		"torn": func() { os.WriteFile(snapshotName(r.dir, at), want[:len(want)/2], 0o644) },
	} {
		lose()
		if got, ok, err := r.SnapshotAt(at); err != nil || !ok || !bytes.Equal(got, want) {
			t.Fatalf("%s snapshot at %d: ok %v err %v, rebuilt equal %v", name, at, ok, err, bytes.Equal(got, want))
		}
	}
	// With the batches below it deleted and no older snapshot, it cannot
	// be rebuilt.
	for _, off := range snaps[:2] {
		os.Remove(snapshotName(r.dir, off))
	}
	os.Remove(snapshotName(r.dir, at))
	if _, err := r.DeleteRecordsBefore(snaps[1]); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := r.SnapshotAt(at); ok || err != nil {
		t.Fatalf("a snapshot whose batches are gone: ok %v err %v", ok, err)
	}
}
