package partition

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
)

// pair is a leader (node 1) and a follower (node 2) of one partition with
// RF 2 and the given min.insync.replicas.
func pair(t *testing.T, minISR string) (leader, follower *Replica) {
	t.Helper()
	cfg := map[string]string{"min.insync.replicas": minISR}
	leader, follower = openFollower(t, t.TempDir(), cfg, nil), openFollower(t, t.TempDir(), cfg, nil)
	t.Cleanup(func() { leader.Close(); follower.Close() })
	leader.SetLeadership(true, 1)
	follower.SetLeadership(false, 1)
	leader.SetAssignment(1, []int32{1, 2}, []int32{1, 2})
	follower.SetAssignment(2, []int32{1, 2}, []int32{1, 2})
	return leader, follower
}

// replicate runs one follower fetch against the leader, as the fetch path does.
func replicate(t *testing.T, leader, follower *Replica, now time.Time) {
	t.Helper()
	off := follower.Log().LogEndOffset()
	hw, err := leader.FollowerFetch(2, off, follower.Log().LatestEpoch(), now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := leader.Log().ReadBytes(off, 1<<20, leader.Log().LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := follower.AppendFollower(b, hw); err != nil {
		t.Fatal(err)
	}
}

func TestHighWatermarkFollowsTheISR(t *testing.T) {
	leader, follower := pair(t, "2")
	now := time.Now()
	res, err := leader.AppendLeader(build(t, idem(5, 0, now.UnixMilli()), 3))
	if err != nil {
		t.Fatal(err)
	}
	if leader.HighWatermark() != 0 {
		t.Fatalf("hw moved before the follower had the batch: %d", leader.HighWatermark())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	acked := make(chan error, 1)
	go func() { acked <- leader.WaitCommitted(ctx, res.LastOffset, res.LeaderEpoch) }()
	replicate(t, leader, follower, now) // follower fetches at 0, gets the batch
	if leader.HighWatermark() != 0 {
		t.Fatal("the follower's fetch at 0 does not prove it has the batch")
	}
	replicate(t, leader, follower, now) // the next fetch at 3 does
	if leader.HighWatermark() != 3 {
		t.Fatalf("hw %d, want 3", leader.HighWatermark())
	}
	if err := <-acked; err != nil {
		t.Fatalf("acks=all waiter: %v", err)
	}
	replicate(t, leader, follower, now)
	if follower.HighWatermark() != 3 {
		t.Fatalf("follower learns the hw from fetch responses: %d", follower.HighWatermark())
	}
	// The follower's log is the leader's, byte for byte, with the epoch stamped.
	lb, _ := leader.Log().ReadBytes(0, 1<<20, 3, true)
	fb, _ := follower.Log().ReadBytes(0, 1<<20, 3, true)
	if string(lb) != string(fb) {
		t.Fatal("replica logs differ")
	}
	if h, _ := batch.ParseHeader(fb); h.PartitionLeaderEpoch != 1 {
		t.Fatalf("epoch in batch %d", h.PartitionLeaderEpoch)
	}
	// Failover: the follower leads at epoch 2 and rejects the old leader's duplicate.
	follower.SetLeadership(true, 2)
	follower.SetAssignment(2, []int32{1, 2}, []int32{2})
	dup, err := follower.AppendLeader(build(t, idem(5, 0, now.UnixMilli()), 3))
	if err != nil || !dup.Duplicate || dup.BaseOffset != 0 {
		t.Fatalf("new leader must answer the retried batch with its original offset: %+v %v", dup, err)
	}
}

func TestMinISRHoldsTheHighWatermark(t *testing.T) {
	leader, follower := pair(t, "2")
	leader.SetAssignment(1, []int32{1, 2}, []int32{1}) // the follower was dropped
	if _, err := leader.AppendLeader(build(t, batch.NoProducer(), 1)); err != nil {
		t.Fatal(err)
	}
	replicate(t, leader, follower, time.Now())
	replicate(t, leader, follower, time.Now())
	if leader.HighWatermark() != 0 {
		t.Fatalf("KIP-966: with ISR 1 < min.insync.replicas 2 the hw must not move, got %d", leader.HighWatermark())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := leader.WaitCommitted(ctx, 0, leader.LeaderEpoch()); !errors.Is(err, ErrNotEnoughReplicasAfterAppend) {
		t.Fatalf("acks=all under min ISR: %v", err)
	}
	if leader.ISRSize() != 1 {
		t.Fatal("isr size")
	}
}

func TestISRShrinkAndExpand(t *testing.T) {
	leader, follower := pair(t, "1")
	t0 := time.Now()
	lag := 10 * time.Second
	if ch := leader.ProposeISRChange(t0, lag); len(ch.Shrink)+len(ch.Expand) != 0 {
		t.Fatalf("a fresh leader gives followers a lag period: %+v", ch)
	}
	if ch := leader.ProposeISRChange(t0.Add(2*lag), lag); len(ch.Shrink) != 1 || ch.Shrink[0] != 2 {
		t.Fatalf("a silent ISR follower is dropped after replica.lag.time.max.ms: %+v", ch)
	}
	leader.SetAssignment(1, []int32{1, 2}, []int32{1})
	for i := 0; i < 5; i++ {
		if _, err := leader.AppendLeader(build(t, batch.NoProducer(), 2)); err != nil {
			t.Fatal(err)
		}
	}
	// The build helper's old timestamps roll a segment per batch, so the
	// follower needs one fetch per batch to catch up.
	replicate(t, leader, follower, t0.Add(2*lag))
	if ch := leader.ProposeISRChange(t0.Add(2*lag), lag); len(ch.Expand) != 0 {
		t.Fatalf("not caught up yet: %+v", ch)
	}
	for i := 0; i < 10 && follower.Log().LogEndOffset() < leader.Log().LogEndOffset(); i++ {
		replicate(t, leader, follower, t0.Add(2*lag+time.Second))
	}
	replicate(t, leader, follower, t0.Add(2*lag+time.Second))
	if ch := leader.ProposeISRChange(t0.Add(2*lag+time.Second), lag); len(ch.Expand) != 1 || ch.Expand[0] != 2 {
		t.Fatalf("a caught-up follower rejoins: %+v", ch)
	}
	if _, err := leader.FollowerFetch(7, 0, -1, t0); !errors.Is(err, ErrUnknownReplica) {
		t.Fatalf("a fetch from a non-replica: %v", err)
	}
}

func TestTruncationPoint(t *testing.T) {
	local := []segment.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 50}, {Epoch: 3, StartOffset: 80}}
	cases := []struct {
		name          string
		requested     int32
		leaderEpoch   int32
		leaderEnd     int64
		localLEO, out int64
	}{
		{"same epoch, leader ends earlier: cut the divergent tail", 3, 3, 90, 100, 90},
		{"same epoch, leader ahead: nothing to cut", 3, 3, 120, 100, 100},
		{"leader never had epoch 3: cut where our epoch 3 began", 3, 2, 85, 100, 80},
		{"leader's epoch 2 ended before ours did", 3, 2, 60, 100, 60},
		{"leader knows nothing at or below: keep", 3, -1, -1, 100, 100},
	}
	for _, c := range cases {
		if got := TruncationPoint(local, c.localLEO, c.requested, c.leaderEpoch, c.leaderEnd); got != c.out {
			t.Errorf("%s: %d, want %d", c.name, got, c.out)
		}
	}
}

func TestTruncateToDropsTailAndProducerState(t *testing.T) {
	r := openTest(t, t.TempDir(), nil, nil)
	defer r.Close()
	now := time.Now().UnixMilli()
	if _, err := r.AppendLeader(build(t, idem(3, 0, now), 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.AppendLeader(build(t, idem(3, 2, now), 2)); err != nil {
		t.Fatal(err)
	}
	if err := r.TruncateTo(2); err != nil {
		t.Fatal(err)
	}
	if r.Log().LogEndOffset() != 2 || r.HighWatermark() != 2 {
		t.Fatalf("leo %d hw %d", r.Log().LogEndOffset(), r.HighWatermark())
	}
	// The truncated batch is no longer a duplicate: it is written again at offset 2.
	res, err := r.AppendLeader(build(t, idem(3, 2, now), 2))
	if err != nil || res.Duplicate || res.BaseOffset != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	_ = config.MinInsyncReplicas
}

// TestZombieLeaderRefusesNewerEpochFollower: a deposed leader (still at
// epoch 1 in its own view) must not count a fetch from a follower that
// already holds epoch-2 data, or it could acknowledge writes on a log that
// diverged from the new leader's.
func TestZombieLeaderRefusesNewerEpochFollower(t *testing.T) {
	leader, follower := pair(t, "2")
	if _, err := leader.AppendLeader(build(t, batch.NoProducer(), 1)); err != nil {
		t.Fatal(err)
	}
	replicate(t, leader, follower, time.Now())
	replicate(t, leader, follower, time.Now())
	hw := leader.HighWatermark()
	// The follower moves on to a new leader at epoch 2 and gets its data.
	follower.SetLeadership(true, 2)
	follower.SetAssignment(2, []int32{1, 2}, []int32{2})
	if _, err := follower.AppendLeader(build(t, batch.NoProducer(), 3)); err != nil {
		t.Fatal(err)
	}
	// The zombie appends at its stale epoch; the follower's fetch claims an
	// offset past it, with epoch-2 data.
	if _, err := leader.AppendLeader(build(t, batch.NoProducer(), 1)); err != nil {
		t.Fatal(err)
	}
	_, err := leader.FollowerFetch(2, follower.Log().LogEndOffset(), follower.Log().LatestEpoch(), time.Now())
	if !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a fetch proving a newer epoch: %v", err)
	}
	if leader.HighWatermark() != hw {
		t.Fatalf("the zombie's high watermark moved: %d -> %d", hw, leader.HighWatermark())
	}
	// A follower whose epoch-1 log runs past the leader's epoch-1 end has diverged.
	_, err = leader.FollowerFetch(2, leader.Log().LogEndOffset()+5, 1, time.Now())
	if !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a fetch past the end of the shared epoch: %v", err)
	}
}

// chanClosed reports whether ch is closed, without waiting.
func chanClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestWakeUpsFollowTheData pins the contract that the acks=all path's long
// polls rely on: a channel taken from LEOChanged or HWChanged before a
// change is closed by that change, so a follower fetch or an acks=all
// waiter that registered first is never left to its timeout (max_wait_ms,
// the request timeout) while the data it waits for is there. Fetch takes
// LEOChanged before it reads the log, so an append that races with the read
// wakes it; a missed wake-up would show as follower rounds ending at
// max_wait_ms and acks=all latencies near 500 ms.
func TestWakeUpsFollowTheData(t *testing.T) {
	leader, follower := pair(t, "2")
	now := time.Now()

	leo := leader.LEOChanged()
	hwCh := leader.HWChanged()
	if _, err := leader.AppendLeader(build(t, batch.NoProducer(), 2)); err != nil {
		t.Fatal(err)
	}
	if !chanClosed(leo) {
		t.Fatal("an append did not close the LEOChanged channel taken before it")
	}
	if chanClosed(hwCh) {
		t.Fatal("the high watermark moved before the follower had the batch")
	}
	if chanClosed(leader.LEOChanged()) {
		t.Fatal("a channel taken after the append is already closed")
	}

	fleo, fhw := follower.LEOChanged(), follower.HWChanged()
	replicate(t, leader, follower, now) // the follower gets the batch
	if !chanClosed(fleo) {
		t.Fatal("a follower append did not close the follower's LEOChanged")
	}
	if chanClosed(fhw) || chanClosed(hwCh) {
		t.Fatal("no high watermark moved yet: the leader learns the follower's offset at its next fetch")
	}
	replicate(t, leader, follower, now) // its next fetch proves it has it
	if !chanClosed(hwCh) {
		t.Fatal("the follower's fetch moved the high watermark without closing HWChanged")
	}
	if !chanClosed(fhw) {
		t.Fatal("the follower's high watermark moved without closing its HWChanged")
	}

	// An acks=all waiter registered before the append is woken by the
	// follower's fetch, not by its context's end.
	res, err := leader.AppendLeader(build(t, batch.NoProducer(), 1))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acked := make(chan error, 1)
	go func() { acked <- leader.WaitCommitted(ctx, res.LastOffset, res.LeaderEpoch) }()
	replicate(t, leader, follower, now)
	replicate(t, leader, follower, now)
	if err := <-acked; err != nil {
		t.Fatalf("acks=all waiter: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the waiter ended with its context, not with the high watermark")
	}
}

// TestLowWatermark: DeleteRecords' low watermark is the lowest log start
// among the leader and its followers on live brokers; a live follower not
// heard from (or whose fetches carried no log start) holds it at -1, and a
// dead one does not count.
func TestLowWatermark(t *testing.T) {
	leader, follower := pair(t, "1")
	for range 3 {
		if _, err := leader.AppendLeader(build(t, batch.NoProducer(), 10)); err != nil {
			t.Fatal(err)
		}
		replicate(t, leader, follower, time.Now())
	}
	replicate(t, leader, follower, time.Now()) // the high watermark reaches the follower
	up := func(int32) bool { return true }
	down := func(id int32) bool { return id != 2 }
	if low, err := leader.LowWatermark(up); err != nil || low != -1 {
		t.Fatalf("a follower whose fetches carried no log start: %d, %v; want -1", low, err)
	}
	leader.FollowerLogStart(2, -1) // an old fetch version: still unknown
	if low, _ := leader.LowWatermark(up); low != -1 {
		t.Fatalf("after a fetch without a log start: %d, want -1", low)
	}
	leader.FollowerLogStart(2, 0)
	if _, err := leader.DeleteRecordsBefore(15); err != nil {
		t.Fatal(err)
	}
	if low, _ := leader.LowWatermark(up); low != 0 {
		t.Fatalf("leader at 15, follower at 0: %d, want 0", low)
	}
	if low, _ := leader.LowWatermark(down); low != 15 {
		t.Fatalf("follower's broker dead: %d, want the leader's 15", low)
	}
	if _, err := follower.DeleteRecordsBefore(20); err != nil {
		t.Fatal(err)
	}
	leader.FollowerLogStart(2, follower.LogStartOffset())
	if low, _ := leader.LowWatermark(up); low != 15 {
		t.Fatalf("leader at 15, follower at 20: %d, want 15", low)
	}
	leader.SetLeadership(false, 2)
	if _, err := leader.LowWatermark(up); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("not leading: %v, want ErrNotLeader", err)
	}
}
