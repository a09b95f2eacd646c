package partition

import (
	"errors"
	"testing"

	"github.com/shale-io/shale/segment/batch"
)

// Above disk_high_watermark a follower refuses replicated batches as the
// leader refuses produce (issue 16 item 9: a node that mostly follows used
// to fill its disk), and appends again once space is freed; the leader's
// high watermark still reaches it.
func TestFollowerAppendRefusedAboveDiskHighWatermark(t *testing.T) {
	leader, follower := pair(t, "1")
	if _, err := leader.AppendLeader(build(t, batch.NoProducer(), 10)); err != nil {
		t.Fatal(err)
	}
	data, err := leader.Log().ReadBytes(0, 1<<20, leader.Log().LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	follower.SetDiskFull(true)
	if err := follower.AppendFollower(data, 10); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("follower append with the disk full: %v, want ErrDiskFull", err)
	}
	if e := follower.Log().LogEndOffset(); e != 0 {
		t.Fatalf("log end %d after a refused append", e)
	}
	if err := follower.AppendFollower(nil, 10); err != nil {
		t.Fatalf("an empty fetch answer with the disk full: %v", err)
	}
	follower.SetDiskFull(false)
	if err := follower.AppendFollower(data, 10); err != nil {
		t.Fatal(err)
	}
	if e := follower.Log().LogEndOffset(); e != 10 {
		t.Fatalf("log end %d, want 10", e)
	}
}

// TestLeaderAppendsRefusedWhenNotWritable: a produce batch and a
// transaction marker are refused alike above disk_high_watermark
// (ErrDiskFull), on a follower (ErrNotLeader) and once the replica is
// closed (ErrClosed), and neither writes anything.
func TestLeaderAppendsRefusedWhenNotWritable(t *testing.T) {
	leader, _ := pair(t, "1")
	check := func(what string, want error) {
		t.Helper()
		if _, err := leader.AppendLeader(build(t, batch.NoProducer(), 1)); !errors.Is(err, want) {
			t.Fatalf("append %s: %v, want %v", what, err, want)
		}
		if _, err := leader.AppendTxnMarker(TxnMarker{ProducerID: 7, ProducerEpoch: 0, CoordinatorEpoch: 1, Commit: true}); !errors.Is(err, want) {
			t.Fatalf("marker %s: %v, want %v", what, err, want)
		}
		if e := leader.Log().LogEndOffset(); e != 0 {
			t.Fatalf("log end %d after the refusals %s", e, what)
		}
	}
	leader.SetDiskFull(true)
	check("with the disk full", ErrDiskFull)
	leader.SetDiskFull(false)
	leader.SetLeadership(false, 1)
	check("on a follower", ErrNotLeader)
	leader.SetLeadership(true, 2)
	leader.Close()
	check("once closed", ErrClosed)
}
