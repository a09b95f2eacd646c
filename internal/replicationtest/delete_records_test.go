package replicationtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
)

// TestDeleteRecordsSurvivesLeaderFailover: records an acknowledged
// DeleteRecords removed must never be readable again, whoever leads next.
// Kafka answers DeleteRecords only once every replica on a live broker has
// moved its log start (DelayedDeleteRecords, Partition.lowWatermarkIfLeader)
// and otherwise REQUEST_TIMED_OUT. Here the followers are paused (alive,
// in the ISR) when the leader is asked; then the leader is killed and a
// follower leads. Before the fix the leader answered at once from its own
// log, and the new leader served offset 0 again.
func TestDeleteRecordsSurvivesLeaderFailover(t *testing.T) {
	// Paused followers stay registered and in the ISR for the whole pause.
	c := startCluster(t, "trim", 1, "--broker-session-timeout", "20s", "--replica-lag-time-max", "30s")
	ctx := proctest.Context(t, 3*time.Minute)
	cl := c.node(1).Client()
	for i := range 100 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: c.topic, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// trim asks the cluster (franz-go routes it to the leader) to delete
	// below offset, with the request timeout given; it returns the low
	// watermark answered, or the error.
	trim := func(offset int64, timeout time.Duration) (int64, error) {
		tctx, cancel := context.WithTimeout(ctx, timeout+15*time.Second)
		defer cancel()
		adm := kadm.NewClient(c.AnyLive().Client())
		adm.SetTimeoutMillis(int32(timeout.Milliseconds()))
		var o kadm.Offsets
		o.AddOffset(c.topic, 0, offset, -1)
		resp, err := adm.DeleteRecords(tctx, o)
		if err != nil {
			return -1, err
		}
		r, ok := resp.Lookup(c.topic, 0)
		if !ok {
			return -1, errors.New("no answer for the partition")
		}
		return r.LowWatermark, r.Err
	}
	// logStart is the partition's log start as its leader answers
	// ListOffsets EARLIEST, asked until an answer comes (a client's
	// metadata may still name the dead leader for a moment).
	logStart := func() int64 {
		var start int64
		var last error
		if err := proctest.WaitFor(30*time.Second, func() bool {
			lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			starts, err := kadm.NewClient(c.AnyLive().Client()).ListStartOffsets(lctx, c.topic)
			if err == nil {
				s, ok := starts.Lookup(c.topic, 0)
				if err = s.Err; ok && err == nil {
					start = s.Offset
					return true
				}
			}
			last = err
			return false
		}); err != nil {
			t.Fatalf("log start: %v (last error %v)", err, last)
		}
		return start
	}

	// Round 1: the followers cannot follow the new log start.
	leader, _ := c.leaderOf(0, 30*time.Second)
	var followers []*node
	for _, n := range c.nodes {
		if n.id != leader {
			followers = append(followers, n)
		}
	}
	for _, f := range followers {
		f.Pause()
	}
	low, err := trim(60, 3*time.Second) // the followers cannot answer within it
	t.Logf("DeleteRecords to 60 with both followers paused: low watermark %d, err %v", low, err)
	if err == nil && low < 60 {
		t.Fatalf("DeleteRecords to 60 acknowledged with low watermark %d", low)
	}
	if err != nil && !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("DeleteRecords with the followers paused: %v, want REQUEST_TIMED_OUT or success", err)
	}
	acked := int64(-1)
	if err == nil {
		acked = low
	}
	c.node(leader).Kill()
	for _, f := range followers {
		f.Resume()
	}
	next, _ := c.leaderOf(0, 60*time.Second, leader)
	t.Logf("leader %d killed, %d leads", leader, next)
	if s := logStart(); s < acked {
		t.Fatalf("DeleteRecords acknowledged low watermark %d, but after the leader %d died, leader %d's log starts at %d: deleted records are back", acked, leader, next, s)
	}

	// Round 2: with every live replica following, DeleteRecords is
	// acknowledged, and survives the next leader's death too.
	c.node(leader).Start()
	c.node(leader).WaitReady()
	c.waitSettled(60 * time.Second)
	if low, err = trim(80, 20*time.Second); err != nil || low < 80 {
		t.Fatalf("DeleteRecords to 80 with every replica live: low watermark %d, err %v", low, err)
	}
	leader, _ = c.leaderOf(0, 30*time.Second)
	c.node(leader).Kill()
	next, _ = c.leaderOf(0, 60*time.Second, leader)
	if s := logStart(); s < 80 {
		t.Fatalf("DeleteRecords acknowledged low watermark 80, but after leader %d died, leader %d's log starts at %d", leader, next, s)
	}
	c.CheckNoPanic()
}
