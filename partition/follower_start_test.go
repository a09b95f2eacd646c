package partition

import (
	"testing"

	"github.com/shale-io/shale/segment/batch"
)

// A follower whose empty log starts inside the leader's batch (it restarted
// at a log start that DeleteRecords put mid-batch) takes the whole batch:
// its log restarts at the batch's base offset, as Kafka's does.
func TestFollowerEmptyLogStartsAtTheLeadersBatch(t *testing.T) {
	leader, follower := pair(t, "1")
	b := build(t, batch.NoProducer(), 60)
	if _, err := leader.AppendLeader(b); err != nil {
		t.Fatal(err)
	}
	if err := follower.Log().ResetTo(30, nil); err != nil { // restarted at the leader's log start, 30
		t.Fatal(err)
	}
	data, err := leader.Log().ReadBytes(30, 1<<20, leader.Log().LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := follower.AppendFollower(data, 60); err != nil {
		t.Fatalf("append of the batch holding the log start: %v", err)
	}
	if s, e := follower.Log().LogStartOffset(), follower.Log().LogEndOffset(); s != 0 || e != 60 {
		t.Fatalf("follower log [%d, %d), want [0, 60)", s, e)
	}
	// A log that is not empty is not restarted: a batch below its end is
	// refused as before.
	if err := follower.AppendFollower(data, 60); err == nil {
		t.Fatal("the same batch again was accepted")
	}
	if e := follower.Log().LogEndOffset(); e != 60 {
		t.Fatalf("log end %d after a refused append", e)
	}
}
