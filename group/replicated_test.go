package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/segment/batch"
)

// The offsets topic is created with offsets.topic.replication.factor
// replicas (default 3), capped at the live brokers.
func TestOffsetsTopicReplicationFactor(t *testing.T) {
	for _, tc := range []struct {
		configured int16
		live       int
		want       int16
	}{{0, 5, 3}, {0, 3, 3}, {0, 1, 1}, {2, 5, 2}, {5, 4, 4}} {
		fc := &fakeCluster{live: tc.live}
		c := New(Config{ReplicationFactor: tc.configured, Logger: quietLogger()}, oneReplica{}, fc)
		if _, err := c.findCoordinator(context.Background(), "g", 0); err != nil {
			t.Fatal(err)
		}
		c.Close()
		if fc.rf != tc.want {
			t.Errorf("offsets.topic.replication.factor %d with %d live brokers: created with %d, want %d",
				tc.configured, tc.live, fc.rf, tc.want)
		}
	}
}

// A coordinator loads its offsets partition to the log end, not to the
// high watermark: on a leader just elected, the high watermark lags the
// log end, and loading less brings committed offsets back. This failed
// before the fix (the new coordinator answered the older offset 5).
func TestLoadReadsToLogEnd(t *testing.T) {
	rep := openOffsetsReplica(t, t.TempDir())
	t.Cleanup(func() { rep.Close() })
	c := newTestCoordinator(t, rep, 0)
	commitOne(t, c, "g", "t", 0, 5)
	c.Close()

	// A follower (2) that has not fetched yet: the high watermark stays.
	rep.SetAssignment(1, []int32{1, 2}, []int32{1, 2})
	hw := rep.HighWatermark()
	b, err := batch.Build(nil, batch.NoProducer(), []batch.Record{
		{Key: offsetKey("g", topicPartition{"t", 0}), Value: offsetValue(offsetEntry{offset: 9, leaderEpoch: -1})}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rep.AppendLeader(b); err != nil {
		t.Fatal(err)
	}
	if rep.HighWatermark() != hw || rep.Log().LogEndOffset() <= hw {
		t.Fatalf("high watermark %d, log end %d: the record must be above the high watermark", rep.HighWatermark(), rep.Log().LogEndOffset())
	}
	c2 := newTestCoordinator(t, rep, 0)
	if got := fetchOne(t, c2, "g", "t", 0); got != 9 {
		t.Fatalf("a new coordinator answers t-0 at %d, want 9 (the record at the log end)", got)
	}
}

// commitAsync sends an OffsetCommit of grp's t-0 and returns its code on
// the channel (-1 for a handler error).
func commitAsync(c *Coordinator, grp string, offset int64) <-chan int16 {
	out := make(chan int16, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req := kmsg.NewOffsetCommitRequest()
		req.Version, req.Group, req.Generation = 8, grp, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		for ctx.Err() == nil {
			reply, err := c.handleOffsetCommit(ctx, &kafka.Request{Key: req.Key(), Version: req.Version, Msg: &req})
			if err != nil {
				out <- -1
				return
			}
			resp, err := reply.Wait(ctx)
			if err != nil {
				out <- -1
				return
			}
			code := resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
			if code != kerr.CoordinatorLoadInProgress.Code {
				out <- code
				return
			}
		}
		out <- -1
	}()
	return out
}

// An OffsetCommit is answered only once it is replicated, and applied to
// the group (what OffsetFetch answers) only then; one that is not
// replicated in time is answered NOT_COORDINATOR and not applied. Before
// the fix OffsetFetch answered the commit while it was on the leader alone,
// and kept answering it after the commit had failed.
func TestCommitAppliedOnlyOnceReplicated(t *testing.T) {
	rep := openOffsetsReplica(t, t.TempDir())
	t.Cleanup(func() { rep.Close() })
	c := New(Config{Partitions: 1, CommitTimeout: 2 * time.Second, Logger: quietLogger()}, oneReplica{rep}, nil)
	t.Cleanup(c.Close)
	commitOne(t, c, "g", "t", 0, 5)

	rep.SetAssignment(1, []int32{1, 2}, []int32{1, 2})
	follow := func() {
		t.Helper()
		if _, err := rep.FollowerFetch(2, rep.Log().LogEndOffset(), -1, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	follow() // follower 2 holds everything so far
	leo := rep.Log().LogEndOffset()
	done := commitAsync(c, "g", 7)
	if err := proctest.WaitFor(10*time.Second, func() bool { return rep.Log().LogEndOffset() > leo }); err != nil {
		t.Fatal("the commit was never appended")
	}
	if got := fetchOne(t, c, "g", "t", 0); got != 5 {
		t.Fatalf("OffsetFetch answers %d while the commit of 7 is on the leader alone, want 5", got)
	}
	select {
	case code := <-done:
		t.Fatalf("commit answered (%v) before it was replicated", kerr.ErrorForCode(code))
	default:
	}
	follow()
	if code := <-done; code != 0 {
		t.Fatalf("replicated commit: %v", kerr.ErrorForCode(code))
	}
	if got := fetchOne(t, c, "g", "t", 0); got != 7 {
		t.Fatalf("OffsetFetch after the replicated commit: %d, want 7", got)
	}

	// Not replicated within offsets.commit.timeout.ms: NOT_COORDINATOR, and
	// the group keeps the replicated offset.
	if code := <-commitAsync(c, "g", 8); code != kerr.NotCoordinator.Code {
		t.Fatalf("unreplicated commit answered %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
	if got := fetchOne(t, c, "g", "t", 0); got != 7 {
		t.Fatalf("OffsetFetch after a commit that was not replicated: %d, want 7", got)
	}
}

// Commits replicated out of order (their waits end in any order) never move
// an offset back, and a tombstone appended after a commit wins over it.
func TestApplyReplicatedOrder(t *testing.T) {
	cfg := Config{}
	cfg.setDefaults()
	next := int64(0)
	g := newGroup("g", &cfg, func(recs []record) (int64, error) { next += int64(len(recs)); return next - 1, nil })
	tp := topicPartition{"t", 0}
	commit := func(off int64) map[topicPartition]offsetEntry {
		_, w, hw := g.commit(commitRequest{generation: -1, offsets: []commitOffset{{tp: tp, offset: off}}})
		if hw < 0 {
			t.Fatalf("commit %d not written", off)
		}
		return w
	}
	a, b := commit(10), commit(20)
	g.applyReplicated(b)
	g.applyReplicated(a)
	if got := g.offsets[tp].offset; got != 20 {
		t.Fatalf("after out-of-order applies: %d, want 20", got)
	}
	if got := g.latestOffsets()[tp].offset; got != 20 {
		t.Fatalf("latest: %d, want 20", got)
	}
	c := commit(30)
	if code, _, _ := g.deleteOffsets([]topicPartition{tp}); code != 0 {
		t.Fatalf("OffsetDelete: %v", kerr.ErrorForCode(code))
	}
	g.applyReplicated(c)
	if e, ok := g.offsets[tp]; ok {
		t.Fatalf("a commit older than the tombstone came back: %+v", e)
	}
	g.applyReplicated(commit(40))
	if got := g.offsets[tp].offset; got != 40 {
		t.Fatalf("a commit after the tombstone: %d, want 40", got)
	}
}
