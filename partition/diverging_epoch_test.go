package partition

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
)

// leaderWithEpochs opens a leader (node 1, replicas 1 and 2, ISR both)
// whose log holds n records in each of epochs, in order, and that then
// leads at epoch lead (which may be above the last epoch it wrote in).
func leaderWithEpochs(t *testing.T, n int, epochs []int32, lead int32) *Replica {
	t.Helper()
	r := openTest(t, t.TempDir(), map[string]string{"min.insync.replicas": "2"}, nil)
	t.Cleanup(func() { r.Close() })
	r.SetAssignment(1, []int32{1, 2}, []int32{1, 2})
	for _, e := range epochs {
		r.SetLeadership(true, e)
		if _, err := r.AppendLeader(build(t, batch.NoProducer(), n)); err != nil {
			t.Fatal(err)
		}
	}
	r.SetLeadership(true, lead)
	return r
}

// TestFollowerFetchDivergence is the leader's KIP-320 decision: a follower
// fetch at FetchOffset whose last batch is of LastFetchedEpoch is answered
// with records (no error) when this log holds that epoch up to at least
// FetchOffset, and with a *DivergedError naming the leader's largest epoch
// at or below it and that epoch's end here otherwise. A diverged fetch
// moves no follower state: no log end, no catch-up, no high watermark.
func TestFollowerFetchDivergence(t *testing.T) {
	type want struct {
		diverged bool
		epoch    int32
		end      int64
	}
	cases := []struct {
		name        string
		epochs      []int32 // 5 records each
		lead        int32
		lastEpoch   int32
		fetchOffset int64
		want        want
	}{
		// Leader history [0@0, 2@5, 4@10], log end 15, leading at 4.
		{"matching latest epoch, caught up", []int32{0, 2, 4}, 4, 4, 15, want{}},
		{"matching latest epoch, behind", []int32{0, 2, 4}, 4, 4, 12, want{}},
		{"older epoch, follower at its end", []int32{0, 2, 4}, 4, 2, 10, want{}},
		{"follower ahead within an epoch the leader ended earlier", []int32{0, 2, 4}, 4, 2, 12, want{true, 2, 10}},
		{"follower ahead within the latest epoch", []int32{0, 2, 4}, 4, 4, 17, want{true, 4, 15}},
		{"an epoch the leader never had", []int32{0, 2, 4}, 4, 3, 12, want{true, 2, 10}},
		{"an epoch the leader never had, even below that epoch's end", []int32{0, 2, 4}, 4, 3, 8, want{true, 2, 10}},
		{"epoch 0, within it", []int32{0, 2, 4}, 4, 0, 5, want{}},
		{"epoch 0, past its end", []int32{0, 2, 4}, 4, 0, 7, want{true, 0, 5}},
		{"epoch 0 on a leader that only wrote epoch 0", []int32{0}, 0, 0, 5, want{}},
		// Leader history [2@0, 4@5]: epoch 1 is older than anything it knows.
		{"unknown older epoch, follower past the leader's first offset", []int32{2, 4}, 4, 1, 3, want{true, 1, 0}},
		{"unknown older epoch, empty follower tail", []int32{2, 4}, 4, 1, 0, want{}},
		// Leader history [0@0, 2@5], log end 10, leading at 4 with nothing
		// written in it yet: Kafka's history would hold 4@10.
		{"epoch above the leader's history, below its epoch", []int32{0, 2}, 4, 3, 12, want{true, 2, 10}},
		{"epoch above the leader's history, at its end", []int32{0, 2}, 4, 3, 10, want{true, 2, 10}},
		{"the leader's own epoch before it wrote in it", []int32{0, 2}, 4, 4, 10, want{}},
		{"the leader's own epoch, past its end", []int32{0, 2}, 4, 4, 11, want{true, 4, 10}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := leaderWithEpochs(t, 5, c.epochs, c.lead)
			hw := r.HighWatermark()
			_, err := r.FollowerFetch(2, c.fetchOffset, c.lastEpoch, time.Now())
			var div *DivergedError
			if !c.want.diverged {
				if err != nil {
					t.Fatalf("err %v, want records", err)
				}
				if f := r.mu.followers[2]; f == nil || f.leo != min(c.fetchOffset, r.Log().LogEndOffset()) {
					t.Fatalf("follower state %+v not recorded at %d", f, c.fetchOffset)
				}
				return
			}
			if !errors.As(err, &div) {
				t.Fatalf("err %v, want a *DivergedError", err)
			}
			if div.Epoch != c.want.epoch || div.EndOffset != c.want.end || div.Follower != 2 {
				t.Fatalf("diverging epoch %d end %d (follower %d), want %d end %d", div.Epoch, div.EndOffset, div.Follower, c.want.epoch, c.want.end)
			}
			if !errors.Is(err, ErrNotLeader) {
				t.Fatalf("%v does not unwrap to ErrNotLeader (the pre-KIP-320 answer)", err)
			}
			if _, heard := r.mu.followers[2]; heard || r.HighWatermark() != hw {
				t.Fatalf("a diverged fetch moved follower state: heard %v, hw %d -> %d", heard, hw, r.HighWatermark())
			}
		})
	}
}

// TestFollowerFetchDivergenceKeepsFencing: the checks before the epoch
// history stay as they were: a follower with a newer epoch than the leader's
// proves it a zombie (ErrNotLeader, not a divergence), a non-replica is
// refused, a follower is not a leader, and a fetch without a last epoch
// (before v12) is never diverged.
func TestFollowerFetchDivergenceKeepsFencing(t *testing.T) {
	r := leaderWithEpochs(t, 5, []int32{0, 2}, 2)
	var div *DivergedError
	if _, err := r.FollowerFetch(2, 10, 3, time.Now()); !errors.Is(err, ErrNotLeader) || errors.As(err, &div) {
		t.Fatalf("last epoch above the leader's: %v, want ErrNotLeader without a divergence", err)
	}
	if _, err := r.FollowerFetch(7, 12, 2, time.Now()); !errors.Is(err, ErrUnknownReplica) {
		t.Fatalf("a diverged fetch from a non-replica: %v, want ErrUnknownReplica", err)
	}
	if _, err := r.FollowerFetch(2, 10, -1, time.Now()); err != nil {
		t.Fatalf("no last epoch: %v", err)
	}
	r.SetLeadership(false, 3)
	if _, err := r.FollowerFetch(2, 12, 2, time.Now()); !errors.Is(err, ErrNotLeader) || errors.As(err, &div) {
		t.Fatalf("a fetch from a follower: %v, want ErrNotLeader without a divergence", err)
	}
}

// TestTruncateDivergent: the follower's cut from a leader's answer, as
// TruncationPoint decides it, with the epoch history and producer state;
// nothing when the answer is about another latest epoch; refused on a
// leader.
func TestTruncateDivergent(t *testing.T) {
	src := leaderWithEpochs(t, 5, []int32{0, 1, 3}, 3) // [0@0, 1@5, 3@10], end 15
	f := openFollower(t, t.TempDir(), nil, nil)
	t.Cleanup(func() { f.Close() })
	f.SetLeadership(false, 4)
	for f.Log().LogEndOffset() < 15 {
		b, err := src.Log().ReadBytes(f.Log().LogEndOffset(), 1<<20, 15, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.AppendFollower(b, 15); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.HighWatermark(); got != 15 {
		t.Fatalf("follower hw %d", got)
	}
	// An answer about epoch 1 while the log's latest is 3: no cut.
	if to, err := f.TruncateDivergent(1, 1, 7); err != nil || to != 15 {
		t.Fatalf("answer about another epoch: to %d, %v; want no cut", to, err)
	}
	// The leader has 2@7 and never had 3: cut where our epoch 3 began, or
	// where the leader's epoch 2 ended if that is earlier.
	to, err := f.TruncateDivergent(3, 2, 12)
	if err != nil || to != 10 {
		t.Fatalf("to %d, %v; want 10", to, err)
	}
	if f.Log().LogEndOffset() != 10 || f.HighWatermark() != 10 {
		t.Fatalf("after the cut: log end %d, hw %d", f.Log().LogEndOffset(), f.HighWatermark())
	}
	want := []segment.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 5}}
	if got := f.Log().Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	// The leader's epoch 1 ended at 7: cut the rest of ours, from the
	// batch holding 7 (offsets 5-9), which the next fetch brings back.
	if to, err := f.TruncateDivergent(1, 1, 7); err != nil || to != 5 {
		t.Fatalf("to %d, %v; want 5", to, err)
	}
	// Agreement: nothing to cut.
	if to, err := f.TruncateDivergent(0, 0, 9); err != nil || to != 5 {
		t.Fatalf("to %d, %v; want 5 (no cut)", to, err)
	}
	f.SetLeadership(true, 5)
	if to, err := f.TruncateDivergent(0, 0, 3); !errors.Is(err, ErrNotLeader) || to != 5 {
		t.Fatalf("on a leader: to %d, %v; want ErrNotLeader and no cut", to, err)
	}
}
