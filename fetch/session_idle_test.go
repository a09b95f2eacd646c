package fetch

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/partition"
)

// Incremental fetch sessions read only the partitions that may have news
// (session_cache.go): counted here in partitions read, not in time.

// 300 partitions: the counts show the same at any size (the race detector
// made opening 1,000 logs take 30 s of make test), 0 reads for an idle poll.
const idleParts = 300

// idleReplicas opens n leader replicas of topic "i" with one record each,
// assigned to replicas, all in the ISR, this node being 1 and leading.
func idleReplicas(t *testing.T, n int, replicas ...int32) leaders {
	t.Helper()
	reps := leaders{}
	dir := t.TempDir()
	// Small preallocated indexes: hundreds of logs in one test.
	tc := config.ResolveTopic(map[string]string{config.SegmentIndexBytes: "4096"}, nil)
	for p := range int32(n) {
		rep, err := partition.Open(partition.Options{Dir: fmt.Sprintf("%s/i-%d", dir, p), Topic: "i", Partition: p,
			Config: tc, Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rep.Close() })
		rep.SetAssignment(1, replicas, replicas)
		rep.SetLeadership(true, 0)
		appendOne(t, rep)
		reps[fmt.Sprintf("i-%d", p)] = rep
	}
	return reps
}

// idleReq is a Fetch v12 of replica (-1: a consumer) in session (id,
// epoch), naming partitions offsets[p] of topic "i" (all n, or none when
// offsets is nil), waiting up to wait.
func idleReq(replica, id, epoch int32, offsets map[int32]int64, wait time.Duration) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 12, replica, int32(wait/time.Millisecond), 1, 64<<20
	req.SessionID, req.SessionEpoch = id, epoch
	if len(offsets) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "i"
		for p := range int32(idleParts) {
			off, ok := offsets[p]
			if !ok {
				continue
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = p, off, 1<<20, -1, -1
			rp.LogStartOffset = -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func allAt(off int64) map[int32]int64 {
	m := make(map[int32]int64, idleParts)
	for p := range int32(idleParts) {
		m[p] = off
	}
	return m
}

// reads runs req through h and returns the answer and the partitions read.
func reads(t *testing.T, h *fetchHandler, req *kmsg.FetchRequest) (*kmsg.FetchResponse, uint64) {
	t.Helper()
	before := h.partReads.Load()
	resp := roundTrip(t, h, req)
	return resp, h.partReads.Load() - before
}

// TestIdleSessionReadsOnlyNews: a consumer's session of 300 caught-up
// partitions reads none of them over 50 idle polls; a record on 3 of them
// makes the next poll read those 3 and answer them alone; a long poll woken
// by an append on one reads that one.
func TestIdleSessionReadsOnlyNews(t *testing.T) {
	reps := idleReplicas(t, idleParts, 1)
	h := &fetchHandler{leaders: reps, log: quiet(), opts: buildOptions([]Option{WithSessionCache(NewSessionCache(10))})}

	resp, n := reads(t, h, idleReq(-1, 0, 0, allAt(0), 0))
	id := resp.SessionID
	if id == 0 || n != idleParts || len(answered(resp)) != idleParts {
		t.Fatalf("full fetch: session %d, %d read, %d answered; want a session, %d and %d", id, n, len(answered(resp)), idleParts, idleParts)
	}
	// Every offset moves to the end: each is named, so each is read once.
	epoch := int32(1)
	if _, n = reads(t, h, idleReq(-1, id, epoch, allAt(1), 0)); n != idleParts {
		t.Fatalf("epoch 1 named all %d, read %d", idleParts, n)
	}
	const polls = 50
	var idle uint64
	for range polls {
		epoch++
		resp, n = reads(t, h, idleReq(-1, id, epoch, nil, 0))
		if resp.ErrorCode != 0 || len(resp.Topics) != 0 {
			t.Fatalf("idle poll at epoch %d: error %d, answered %v", epoch, resp.ErrorCode, answered(resp))
		}
		idle += n
	}
	if idle != 0 {
		t.Fatalf("%d idle polls of %d caught-up partitions read %d partitions, want 0", polls, idleParts, idle)
	}

	for _, p := range []int{7, 150, 299} {
		appendOne(t, reps[fmt.Sprintf("i-%d", p)])
	}
	epoch++
	resp, n = reads(t, h, idleReq(-1, id, epoch, nil, 0))
	if got := answered(resp); n != 3 || len(got) != 3 || got["i-7"] == 0 || got["i-150"] == 0 || got["i-299"] == 0 {
		t.Fatalf("after 3 appends: read %d, answered %v; want the 3 with their records", n, got)
	}
	// The consumer moves those 3 on: they are read (named) once, then
	// nothing again.
	epoch++
	if _, n = reads(t, h, idleReq(-1, id, epoch, map[int32]int64{7: 2, 150: 2, 299: 2}, 0)); n != 3 {
		t.Fatalf("3 named: read %d", n)
	}
	epoch++
	if resp, n = reads(t, h, idleReq(-1, id, epoch, nil, 0)); n != 0 || len(resp.Topics) != 0 {
		t.Fatalf("idle again: read %d, answered %v", n, answered(resp))
	}

	// A long poll (min bytes 1) woken by an append on one partition reads
	// that one alone, whether the append lands before its first read or
	// during its wait.
	epoch++
	done := make(chan struct{})
	var lp *kmsg.FetchResponse
	var lpReads uint64
	go func() {
		defer close(done)
		before := h.partReads.Load()
		reply, err := h.handle(proctest.Context(t, 30*time.Second), &kafka.Request{Key: 1, Version: 12,
			Msg: idleReq(-1, id, epoch, nil, 20*time.Second)})
		if err != nil {
			t.Error(err)
			return
		}
		lpReads = h.partReads.Load() - before
		lp = decodeBody(t, reply.Body.(*body), 12)
	}()
	appendOne(t, reps["i-201"])
	<-done
	if lp == nil {
		t.FailNow()
	}
	if got := answered(lp); lpReads != 1 || len(got) != 1 || got["i-201"] == 0 {
		t.Fatalf("long poll: read %d, answered %v; want i-201 alone", lpReads, got)
	}
}

// TestIdleFollowerSessionStaysInSync: a follower's session of 300
// caught-up partitions reads none of them over idle polls, and the leader
// counts the follower caught up at each poll: its last caught-up time is
// the last poll's, no ISR shrink is proposed, and an append keeps it
// (settled into the follower's state) until the follower's next fetch.
func TestIdleFollowerSessionStaysInSync(t *testing.T) {
	reps := idleReplicas(t, idleParts, 1, 2)
	h := &fetchHandler{leaders: reps, log: quiet(), opts: buildOptions([]Option{WithSessionCache(NewSessionCache(10))})}
	resp, n := reads(t, h, idleReq(2, 0, 0, allAt(1), 0))
	id := resp.SessionID
	if id == 0 || n != idleParts {
		t.Fatalf("full follower fetch: session %d, read %d", id, n)
	}
	epoch := int32(0)
	var idle uint64
	var lastPoll time.Time
	for range 20 {
		epoch++
		lastPoll = time.Now()
		resp, n = reads(t, h, idleReq(2, id, epoch, nil, 0))
		if resp.ErrorCode != 0 || len(resp.Topics) != 0 {
			t.Fatalf("idle follower poll: error %d, answered %v", resp.ErrorCode, answered(resp))
		}
		idle += n
	}
	if idle != 0 {
		t.Fatalf("20 idle follower polls read %d partitions, want 0", idle)
	}
	rep := reps["i-42"]
	status := func() partition.FollowerStatus {
		for _, f := range rep.Status().Followers {
			if f.ID == 2 {
				return f
			}
		}
		t.Fatal("follower 2 unknown to the leader")
		return partition.FollowerStatus{}
	}
	caughtUp := func() time.Time { return status().LastCaughtUp }
	if cu := caughtUp(); cu.Before(lastPoll) {
		t.Fatalf("follower last caught up at %v, before the last poll at %v", cu, lastPoll)
	}
	if lf := status().LastFetch; lf.Before(lastPoll) {
		t.Fatalf("follower last fetched at %v, before the last poll at %v", lf, lastPoll)
	}
	lagMax := 30 * time.Second
	if ch := rep.ProposeISRChange(lastPoll.Add(lagMax-time.Second), lagMax); len(ch.Shrink) != 0 {
		t.Fatalf("ISR change %+v proposed for a follower caught up at its last poll", ch)
	}
	// An append: the follower is no longer caught up, but was at its last
	// poll.
	appendOne(t, rep)
	if cu := caughtUp(); cu.Before(lastPoll) {
		t.Fatalf("after an append: last caught up %v, before the last poll %v", cu, lastPoll)
	}
	if ch := rep.ProposeISRChange(lastPoll.Add(lagMax-time.Second), lagMax); len(ch.Shrink) != 0 {
		t.Fatalf("ISR change %+v proposed after an append", ch)
	}
	if ch := rep.ProposeISRChange(time.Now().Add(lagMax+time.Second), lagMax); len(ch.Shrink) != 1 {
		t.Fatalf("ISR change %+v: a follower silent past replica.lag.time.max.ms stays", ch)
	}
	// The next poll reads the partition with news alone and sends its
	// record; the follower then fetches it (named) and is caught up again.
	epoch++
	resp, n = reads(t, h, idleReq(2, id, epoch, nil, 0))
	if got := answered(resp); n != 1 || len(got) != 1 || got["i-42"] == 0 {
		t.Fatalf("after the append: read %d, answered %v", n, got)
	}
	epoch++
	before := time.Now()
	if _, n = reads(t, h, idleReq(2, id, epoch, map[int32]int64{42: 2}, 0)); n != 1 {
		t.Fatalf("the follower's fetch of i-42 read %d", n)
	}
	if cu := caughtUp(); cu.Before(before) {
		t.Fatalf("caught up at %v, before its fetch at the log end (%v)", cu, before)
	}
}
