package partition

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/segment/vfs"
)

// leader3 opens a leader at epoch 1 of replicas [1 2 3] with the given ISR
// and min.insync.replicas=2, and options changed by mod.
func leader3(t *testing.T, isr []int32, mod func(*Options)) *Replica {
	t.Helper()
	opts := Options{Dir: t.TempDir(), Topic: "t", Config: config.ResolveTopic(map[string]string{"min.insync.replicas": "2"}, nil)}
	if mod != nil {
		mod(&opts)
	}
	r, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	r.SetAssignmentAt(1, []int32{1, 2, 3}, isr, 0)
	r.SetLeadership(true, 1)
	return r
}

func appendN(t *testing.T, r *Replica, n int) {
	t.Helper()
	if _, err := r.AppendLeader(build(t, batch.NoProducer(), n)); err != nil {
		t.Fatal(err)
	}
}

func fetchAt(t *testing.T, r *Replica, id int32, off int64, now time.Time) int64 {
	t.Helper()
	hw, err := r.FollowerFetch(id, off, 1, now)
	if err != nil {
		t.Fatalf("follower %d fetch at %d: %v", id, off, err)
	}
	return hw
}

// TestMaximalISRCountsJoiningMember is issue 15 item 3: once the leader has
// proposed ISR ∪ {3}, the control plane may commit it and elect 3, so the
// high watermark must not pass 3's log end from the proposal on, even
// before the leader learns that the change committed. Before the maximal
// ISR, the leader computed it over its old ISR {1 2} until its next
// reconcile, and acknowledged records 3 did not have.
func TestMaximalISRCountsJoiningMember(t *testing.T) {
	r := leader3(t, []int32{1, 2}, nil)
	now := time.Now()
	appendN(t, r, 5)
	fetchAt(t, r, 2, 5, now)
	fetchAt(t, r, 3, 5, now) // caught up: 3 may join
	if hw := r.HighWatermark(); hw != 5 {
		t.Fatalf("hw %d, want 5", hw)
	}
	if !r.BeginISRChange(1, []int32{1, 2, 3}, 0) {
		t.Fatal("the proposal was refused")
	}
	if r.BeginISRChange(1, []int32{1, 2, 3}, 0) {
		t.Fatal("a second proposal was recorded while one is pending")
	}
	if ch := r.ProposeISRChange(now, time.Minute); len(ch.Expand)+len(ch.Shrink) != 0 {
		t.Fatalf("a change proposed while one is pending: %+v", ch)
	}
	appendN(t, r, 3)
	if hw := fetchAt(t, r, 2, 8, now); hw != 5 {
		t.Fatalf("hw %d with the joining member 3 at 5, want 5", hw)
	}
	r.EndISRChange(true, []int32{1, 2, 3}, 1)
	if isr := r.ISR(); !slices.Equal(isr, []int32{1, 2, 3}) {
		t.Fatalf("committed ISR %v", isr)
	}
	// A reconcile that read the record before the commit is stale.
	r.SetAssignmentAt(1, []int32{1, 2, 3}, []int32{1, 2}, 0)
	if isr := r.ISR(); !slices.Equal(isr, []int32{1, 2, 3}) {
		t.Fatalf("a stale assignment replaced the committed ISR: %v", isr)
	}
	if hw := fetchAt(t, r, 3, 8, now); hw != 8 {
		t.Fatalf("hw %d once 3 has everything, want 8", hw)
	}
}

// TestMaximalISRKeepsLeavingMember: a member proposed for removal keeps
// counting in the high watermark until the shrink is committed; a refused
// expansion stops counting the member at once.
func TestMaximalISRKeepsLeavingMember(t *testing.T) {
	r := leader3(t, []int32{1, 2, 3}, nil)
	now := time.Now()
	appendN(t, r, 5)
	fetchAt(t, r, 2, 5, now)
	fetchAt(t, r, 3, 5, now)
	if !r.BeginISRChange(1, []int32{1, 2}, 0) {
		t.Fatal("the proposal was refused")
	}
	appendN(t, r, 3)
	if hw := fetchAt(t, r, 2, 8, now); hw != 5 {
		t.Fatalf("hw %d with the leaving member 3 at 5 before the shrink committed, want 5", hw)
	}
	r.EndISRChange(true, []int32{1, 2}, 1)
	if hw := r.HighWatermark(); hw != 8 {
		t.Fatalf("hw %d once the shrink committed, want 8", hw)
	}

	// 3 catches up and is proposed again; the control plane refuses.
	fetchAt(t, r, 3, 8, now)
	if !r.BeginISRChange(1, []int32{1, 2, 3}, 0) {
		t.Fatal("the proposal was refused")
	}
	r.EndISRChange(false, nil, -1)
	appendN(t, r, 2)
	if hw := fetchAt(t, r, 2, 10, now); hw != 10 {
		t.Fatalf("hw %d after the expansion was refused, want 10 (3 is not in the ISR)", hw)
	}
	// A new term drops a pending proposal of the old one.
	if !r.BeginISRChange(1, []int32{1, 2, 3}, 0) {
		t.Fatal("the proposal was refused")
	}
	r.SetLeadership(true, 2)
	if r.BeginISRChange(1, []int32{1, 2, 3}, 0) {
		t.Fatal("a proposal of an old epoch was recorded")
	}
	if !r.BeginISRChange(2, []int32{1, 2, 3}, 0) {
		t.Fatal("the old term's proposal is still pending")
	}
}

// TestNewLeaderCountsISRCaughtUpAtElection is issue 15 item 7: an ISR member
// counts as caught up at the election (Kafka's makeLeader), so a new leader
// does not drop a follower whose first fetch is behind before it has had
// replica.lag.time.max.ms to catch up. Before, its lastCaughtUp started at
// zero and it was dropped at the first check.
func TestNewLeaderCountsISRCaughtUpAtElection(t *testing.T) {
	t0 := time.Now()
	clock := t0
	r := leader3(t, []int32{1, 2, 3}, func(o *Options) { o.Now = func() time.Time { return clock } })
	appendN(t, r, 5)
	fetchAt(t, r, 2, 0, t0.Add(time.Second))
	fetchAt(t, r, 3, 5, t0.Add(time.Second))
	if ch := r.ProposeISRChange(t0.Add(2*time.Second), 3*time.Second); len(ch.Shrink) != 0 {
		t.Fatalf("follower dropped 2 s after the election with a 3 s lag limit: %+v", ch)
	}
	if ch := r.ProposeISRChange(t0.Add(4*time.Second), 3*time.Second); !slices.Equal(ch.Shrink, []int32{2}) {
		t.Fatalf("follower 2 never caught up in 4 s: %+v, want it dropped", ch)
	}
}

// TestExpansionSignalledOnFetch is issue 15 item 7: the fetch that brings a
// follower outside the ISR to the high watermark calls OnISRExpandable, so
// the broker proposes the expansion at once instead of at its periodic
// check; fetches below it, of ISR members, or with a proposal pending, do
// not.
func TestExpansionSignalledOnFetch(t *testing.T) {
	var calls atomic.Int32
	r := leader3(t, []int32{1, 2}, func(o *Options) { o.OnISRExpandable = func() { calls.Add(1) } })
	now := time.Now()
	appendN(t, r, 5)
	fetchAt(t, r, 2, 5, now)
	fetchAt(t, r, 3, 3, now)
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d calls before any follower outside the ISR caught up", n)
	}
	fetchAt(t, r, 3, 5, now)
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d calls once follower 3 reached the high watermark, want 1", n)
	}
	if ch := r.ProposeISRChange(now, time.Minute); !slices.Equal(ch.Expand, []int32{3}) {
		t.Fatalf("proposal %+v, want 3 to join", ch)
	}
	r.BeginISRChange(1, []int32{1, 2, 3}, 0)
	fetchAt(t, r, 3, 5, now)
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d calls with the expansion pending, want 1", n)
	}
}

// TestFetchPastLogEndNotCaughtUp is issue 15 item 8: a follower fetching past
// the leader's log end holds offsets the leader does not have; it is not
// caught up and its offset does not count (OFFSET_OUT_OF_RANGE, as Kafka).
// Before, it counted as caught up with the leader's log end.
func TestFetchPastLogEndNotCaughtUp(t *testing.T) {
	r := leader3(t, []int32{1, 2}, nil)
	appendN(t, r, 5)
	// Without a last fetched epoch (-1); with one, KIP-320 answers a divergence.
	if _, err := r.FollowerFetch(2, 7, -1, time.Now()); !errors.Is(err, segment.ErrOffsetOutOfRange) {
		t.Fatalf("fetch at 7 of 5: %v, want ErrOffsetOutOfRange", err)
	}
	for _, f := range r.Status().Followers {
		if f.ID == 2 && (f.Heard || !f.LastCaughtUp.IsZero()) {
			t.Fatalf("follower 2 recorded from a fetch past the log end: %+v", f)
		}
	}
	if hw := r.HighWatermark(); hw != 0 {
		t.Fatalf("hw %d, want 0", hw)
	}
}

// TestAcksAllWokenWhenISRFallsBelowMin is issue 15 item 8: an acks=all
// waiter learns at once that the ISR fell below min.insync.replicas
// (NOT_ENOUGH_REPLICAS_AFTER_APPEND) instead of waiting for its timeout.
func TestAcksAllWokenWhenISRFallsBelowMin(t *testing.T) {
	r := leader3(t, []int32{1, 2}, nil)
	res, err := r.AppendLeader(build(t, batch.NoProducer(), 1))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.WaitCommitted(ctx, res.LastOffset, res.LeaderEpoch) }()
	r.SetAssignmentAt(1, []int32{1, 2, 3}, []int32{1}, 1)
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotEnoughReplicasAfterAppend) {
			t.Fatalf("waiter: %v, want ErrNotEnoughReplicasAfterAppend", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the acks=all waiter was not woken when the ISR fell below min.insync.replicas")
	}
}

// TestTruncationRemovesSnapshotsAtOrAbove is issue 15 item 8: producer
// snapshots at or above a truncation point describe the cut batches; they
// are removed with them, or a reopen after the log grows past them again
// would load the divergent tail's producer state.
func TestTruncationRemovesSnapshotsAtOrAbove(t *testing.T) {
	dir := t.TempDir()
	r := openTest(t, dir, nil, nil)
	defer r.Close()
	appendN(t, r, 5)
	appendN(t, r, 5)
	ps := NewProducerState()
	for _, off := range []int64{3, 5, 8} {
		if err := ps.WriteSnapshot(vfs.Default, dir, off, 0); err != nil {
			t.Fatal(err)
		}
	}
	r.SetLeadership(false, 1)
	if err := r.TruncateTo(5); err != nil {
		t.Fatal(err)
	}
	if got := listSnapshots(vfs.Default, dir); !slices.Equal(got, []int64{3}) {
		t.Fatalf("snapshots after cutting at 5: %v, want [3]", got)
	}
	if _, err := os.Stat(snapshotName(dir, 3)); err != nil {
		t.Fatal(err)
	}
}

// TestMaximalISRLostAnswer: when the control plane's answer is lost (a
// timeout), the proposal keeps counting until a record newer than the one
// it was written over is applied, or until it is older than
// replica.lag.time.max.ms at a proposal.
func TestMaximalISRLostAnswer(t *testing.T) {
	r := leader3(t, []int32{1, 2}, nil)
	now := time.Now()
	appendN(t, r, 5)
	fetchAt(t, r, 2, 5, now)
	fetchAt(t, r, 3, 5, now)
	if !r.BeginISRChange(1, []int32{1, 2, 3}, 0) {
		t.Fatal("the proposal was refused")
	}
	appendN(t, r, 3)
	r.SetAssignmentAt(1, []int32{1, 2, 3}, []int32{1, 2}, 0) // the base record again: still pending
	if hw := fetchAt(t, r, 2, 8, now); hw != 5 {
		t.Fatalf("hw %d with the proposal pending, want 5", hw)
	}
	r.SetAssignmentAt(1, []int32{1, 2, 3}, []int32{1, 2, 3}, 1) // the proposal, committed
	if ch := r.ProposeISRChange(now, time.Minute); len(ch.Expand)+len(ch.Shrink) != 0 {
		t.Fatalf("proposal %+v after the commit was applied", ch)
	}
	if !r.BeginISRChange(1, []int32{1, 2}, 1) {
		t.Fatal("the commit did not end the pending proposal")
	}
	if ch := r.ProposeISRChange(time.Now().Add(time.Hour), time.Minute); len(ch.Expand)+len(ch.Shrink) == 0 {
		t.Fatal("a proposal lost for an hour still blocks the next")
	}
}

// TestISRReadmitsOnlyAfterAFetch is the first step of issue 22's
// clean-clone loss: both followers were killed right after fetching to the
// leader's log end, the controller took them out of the ISR (into the
// ELR), and the leader's next ISR check, finding their last fetches within
// replica.lag.time.max.ms and at the high watermark, re-admitted them. A
// follower a committed ISR took out joins again only at a fetch made after
// that.
func TestISRReadmitsOnlyAfterAFetch(t *testing.T) {
	r := leader3(t, []int32{1, 2, 3}, nil)
	now := time.Now()
	appendN(t, r, 5)
	fetchAt(t, r, 2, 5, now)
	fetchAt(t, r, 3, 5, now)
	r.SetAssignmentAt(1, []int32{1, 2, 3}, []int32{1}, 1) // the controller: 2 and 3 are dead
	if ch := r.ProposeISRChange(now.Add(time.Second), time.Minute); len(ch.Expand) != 0 {
		t.Fatalf("re-admitted %v without a fetch since they left the ISR", ch.Expand)
	}
	fetchAt(t, r, 3, 5, now.Add(2*time.Second))
	if ch := r.ProposeISRChange(now.Add(2*time.Second), time.Minute); !slices.Equal(ch.Expand, []int32{3}) {
		t.Fatalf("expand %v after 3 fetched again at the log end, want [3]", ch.Expand)
	}
}
