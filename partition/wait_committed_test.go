package partition

import (
	"context"
	"errors"
	"testing"

	"github.com/shale-io/shale/segment/batch"
)

// A deposed leader that has already become a follower, cut the record it
// appended and taken the new leader's records and high watermark past it
// must not acknowledge that record: WaitCommitted answers ErrNotLeader,
// though its high watermark alone would say the record is committed.
func TestWaitCommittedFailsOnceTheEpochMovedOn(t *testing.T) {
	zombie, _ := pair(t, "1")
	res, err := zombie.AppendLeader(build(t, batch.NoProducer(), 1))
	if err != nil {
		t.Fatal(err)
	}
	// The new leader (epoch 2) has another record at that offset, and more.
	newLeader := openTest(t, t.TempDir(), nil, nil)
	defer newLeader.Close()
	newLeader.SetLeadership(true, 2)
	for range 3 {
		if _, err := newLeader.AppendLeader(build(t, batch.NoProducer(), 1)); err != nil {
			t.Fatal(err)
		}
	}
	zombie.SetLeadership(false, 2)
	if err := zombie.TruncateTo(res.BaseOffset); err != nil {
		t.Fatal(err)
	}
	data, err := newLeader.Log().ReadBytes(0, 1<<20, newLeader.Log().LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := zombie.AppendFollower(data, 3); err != nil {
		t.Fatal(err)
	}
	if hw := zombie.HighWatermark(); hw <= res.LastOffset {
		t.Fatalf("high watermark %d: the test needs it past %d", hw, res.LastOffset)
	}
	if err := zombie.WaitCommitted(context.Background(), res.LastOffset, res.LeaderEpoch); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("WaitCommitted after the epoch moved on: %v, want ErrNotLeader", err)
	}
	// Leading again in a later epoch is no better.
	zombie.SetLeadership(true, 3)
	if err := zombie.WaitCommitted(context.Background(), res.LastOffset, res.LeaderEpoch); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("WaitCommitted in a later epoch: %v, want ErrNotLeader", err)
	}
	// In its own epoch, a committed record is acknowledged.
	res2, err := zombie.AppendLeader(build(t, batch.NoProducer(), 1))
	if err != nil {
		t.Fatal(err)
	}
	if res2.LeaderEpoch != 3 {
		t.Fatalf("appended in epoch %d, want 3", res2.LeaderEpoch)
	}
}
