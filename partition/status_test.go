package partition

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shale-io/shale/segment/batch"
)

// TestStatusLeaderAndFollower: a leader reports every assigned follower,
// heard from or not, with the log end offset and the times of its fetches;
// a follower reports its own offsets and no followers.
func TestStatusLeaderAndFollower(t *testing.T) {
	leader, follower := openTest(t, t.TempDir(), nil, nil), openFollower(t, t.TempDir(), nil, nil)
	defer leader.Close()
	defer follower.Close()
	leader.SetLeadership(true, 1)
	follower.SetLeadership(false, 1)
	leader.SetAssignment(1, []int32{1, 2, 3}, []int32{1, 2, 3})
	follower.SetAssignment(2, []int32{1, 2, 3}, []int32{1, 2, 3})
	if _, err := leader.AppendLeader(build(t, batch.NoProducer(), 3)); err != nil {
		t.Fatal(err)
	}
	st := leader.Status()
	if !st.Leader || st.LeaderEpoch != 1 || st.Self != 1 || st.LogEndOffset != 3 || st.HighWatermark != 0 ||
		st.LogStartOffset != 0 || st.LocalLogStartOffset != 0 || !slices.Equal(st.ISR, []int32{1, 2, 3}) ||
		!slices.Equal(st.Replicas, []int32{1, 2, 3}) || st.LeaderSince.IsZero() {
		t.Fatalf("leader status before any fetch: %+v", st)
	}
	want := []FollowerStatus{{ID: 2, LogEndOffset: -1}, {ID: 3, LogEndOffset: -1}}
	if !slices.Equal(st.Followers, want) {
		t.Fatalf("followers before any fetch: %+v", st.Followers)
	}

	t0 := time.Now()
	t1 := t0.Add(time.Second)
	if _, err := leader.FollowerFetch(2, 0, -1, t0); err != nil {
		t.Fatal(err)
	}
	st = leader.Status()
	// An ISR member counts as caught up at the election (Kafka's makeLeader).
	if f := st.Followers[0]; !f.Heard || f.LogEndOffset != 0 || !f.LastFetch.Equal(t0) || !f.LastCaughtUp.Equal(st.LeaderSince) {
		t.Fatalf("follower 2 after a fetch at 0 of 3: %+v", f)
	}
	if _, err := leader.FollowerFetch(2, 3, 1, t1); err != nil {
		t.Fatal(err)
	}
	st = leader.Status()
	if f := st.Followers[0]; !f.Heard || f.LogEndOffset != 3 || !f.LastFetch.Equal(t1) || !f.LastCaughtUp.Equal(t1) {
		t.Fatalf("follower 2 caught up: %+v", f)
	}
	if f := st.Followers[1]; f.Heard || f.ID != 3 {
		t.Fatalf("follower 3 never fetched: %+v", f)
	}
	if st.HighWatermark != 0 {
		t.Fatalf("high watermark %d with ISR member 3 not heard from", st.HighWatermark)
	}
	// The ISR shrinks to the leader and follower 2: the high watermark moves.
	leader.SetAssignment(1, []int32{1, 2, 3}, []int32{1, 2})
	if st = leader.Status(); st.HighWatermark != 3 || !slices.Equal(st.ISR, []int32{1, 2}) || len(st.Followers) != 2 {
		t.Fatalf("after the ISR shrink: %+v", st)
	}
	// The snapshot's slices are the caller's.
	st.ISR[0], st.Replicas[0] = 99, 99
	if again := leader.Status(); again.ISR[0] != 1 || again.Replicas[0] != 1 {
		t.Fatalf("status shares its slices with the replica: %+v", again)
	}

	fst := follower.Status()
	if fst.Leader || fst.Self != 2 || fst.LogEndOffset != 0 || len(fst.Followers) != 0 || !slices.Equal(fst.ISR, []int32{1, 2, 3}) {
		t.Fatalf("follower status: %+v", fst)
	}
	// A deposed leader reports no followers.
	leader.SetLeadership(false, 2)
	if st = leader.Status(); st.Leader || st.LeaderEpoch != 2 || len(st.Followers) != 0 {
		t.Fatalf("deposed leader: %+v", st)
	}
}

// TestStatusConcurrent reads statuses while a leader appends and a follower
// fetches: each snapshot is consistent (high watermark at or below the log
// end, each follower's log end at or below the leader's). Run with -race.
func TestStatusConcurrent(t *testing.T) {
	leader := openTest(t, t.TempDir(), nil, nil)
	defer leader.Close()
	leader.SetLeadership(true, 1)
	leader.SetAssignment(1, []int32{1, 2}, []int32{1, 2})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 200 {
			if _, err := leader.AppendLeader(build(t, batch.NoProducer(), 2)); err != nil {
				t.Error(err)
				return
			}
			if _, err := leader.FollowerFetch(2, leader.Log().LogEndOffset(), 1, time.Now()); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; i < 200; i++ {
		st := leader.Status()
		if st.HighWatermark > st.LogEndOffset {
			t.Fatalf("high watermark %d past the log end %d", st.HighWatermark, st.LogEndOffset)
		}
		for _, f := range st.Followers {
			if f.LogEndOffset > st.LogEndOffset {
				t.Fatalf("follower %d at %d past the leader's log end %d", f.ID, f.LogEndOffset, st.LogEndOffset)
			}
		}
	}
	wg.Wait()
	if st := leader.Status(); st.HighWatermark != 400 || st.LogEndOffset != 400 || st.Followers[0].LogEndOffset != 400 {
		t.Fatalf("final status: %+v", st)
	}
}

// TestDescribeCommitWait names what an acks=all write waits for: the high
// watermark and, per follower, where it stands or that it never fetched.
func TestDescribeCommitWait(t *testing.T) {
	leader := openTest(t, t.TempDir(), nil, nil)
	defer leader.Close()
	leader.SetLeadership(true, 1)
	leader.SetAssignment(1, []int32{1, 2, 3}, []int32{1, 2, 3})
	if _, err := leader.AppendLeader(build(t, batch.NoProducer(), 3)); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := leader.FollowerFetch(2, 3, 1, t0); err != nil {
		t.Fatal(err)
	}
	got := leader.DescribeCommitWait(2, t0.Add(1500*time.Millisecond))
	for _, want := range []string{"offset 2: high watermark 0, log end 3, leader true in epoch 1, ISR [1 2 3]",
		"; follower 2 (in the ISR): log end 3, last fetch 1.5s ago",
		"; follower 3 (in the ISR): no fetch in the "} {
		if !strings.Contains(got, want) {
			t.Errorf("description %q lacks %q", got, want)
		}
	}
}
