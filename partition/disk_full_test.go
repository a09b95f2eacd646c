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
