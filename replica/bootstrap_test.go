package replica_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
)

// TestFollowerRestartsAtLeaderLogStart is the follower bootstrap's path
// for offsets retained nowhere: a follower is stopped, the leader goes on
// and DeleteRecords moves its log start past the follower's log end, and
// the restarted follower, answered OFFSET_OUT_OF_RANGE, restarts its log
// empty at the leader's log start with no history (Kafka's
// truncateFullyAndStartAt) and copies the rest: the same bytes from there,
// and the epoch history the fetched batches carry, starting at the new log
// start. With remote storage off, and on (the deleted offsets were never
// tiered: no remote segment will ever hold them, and waiting for one kept
// the follower out for ever).
func TestFollowerRestartsAtLeaderLogStart(t *testing.T) {
	for _, remote := range []string{"false", "true"} {
		t.Run("remote.storage.enable="+remote, func(t *testing.T) { testFollowerRestartsAtLeaderLogStart(t, remote) })
	}
}

func testFollowerRestartsAtLeaderLogStart(t *testing.T, remote string) {
	dir := t.TempDir()
	session := testnode.WithSession(2 * time.Second)
	lag := func(c *config.Broker) { c.ReplicaLagTimeMax = 2 * time.Second }
	nodes, srv := testnode.StartCluster(t, dir, 2, session, lag)
	ctx := proctest.Context(t, 90*time.Second)
	adm := kadm.NewClient(testnode.Client(t, nodes[0].KafkaAddr()))
	proctest.Eventually(t, 20*time.Second, "2 brokers", func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 2
	})
	const topic = "noremote"
	segBytes := "2048"
	if r, err := adm.CreateTopic(ctx, 1, 2, map[string]*string{"segment.bytes": &segBytes, "remote.storage.enable": &remote}, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	var leaderID int32
	proctest.Eventually(t, 20*time.Second, "a leader", func() bool {
		m, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false
		}
		leaderID = m.Topics[topic].Partitions[0].Leader
		return leaderID > 0
	})
	followerID := 3 - leaderID
	leader, follower := nodes[leaderID-1], nodes[followerID-1]
	prod := testnode.Client(t, leader.KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.RecordDeliveryTimeout(30*time.Second))
	if err := prod.ProduceSync(ctx, testnode.Records(topic, 20, "a")...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	lrep := testnode.Replica(leader, topic, 0)
	proctest.Eventually(t, 20*time.Second, "the follower caught up", func() bool {
		f := testnode.Replica(follower, topic, 0)
		return f != nil && lrep != nil && f.Log().LogEndOffset() == lrep.Log().LogEndOffset()
	})
	oldEnd := testnode.Replica(follower, topic, 0).Log().LogEndOffset()
	if err := follower.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// The leader goes on alone, and deletes records past the follower's end
	// once the ISR has shrunk to it (so that its high watermark moves). One
	// record per batch, so that the new log start is a batch boundary (see
	// the report on DeleteRecords inside a batch).
	for _, r := range testnode.Records(topic, 60, "b") {
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	end := lrep.Log().LogEndOffset()
	proctest.Eventually(t, 20*time.Second, "the leader's high watermark at its log end", func() bool {
		return lrep.HighWatermark() == end
	})
	newStart := end - 10
	if newStart <= oldEnd {
		t.Fatalf("log end %d leaves nothing to delete past the follower's %d", end, oldEnd)
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: newStart})
	if res, err := adm.DeleteRecords(ctx, offs); err != nil || res.Error() != nil {
		t.Fatalf("delete records: %v %v", err, res.Error())
	}
	if got := lrep.Log().LogStartOffset(); got != newStart {
		t.Fatalf("leader log start %d after DeleteRecords, want %d", got, newStart)
	}

	follower = testnode.Start(t, filepath.Join(dir, "node", string(rune('a'+followerID-1))),
		testnode.WithNATS(srv.ClientURL()), testnode.WithNodeID(followerID), session, lag)
	proctest.Eventually(t, 30*time.Second, "the restarted follower at the leader's log end", func() bool {
		f := testnode.Replica(follower, topic, 0)
		return f != nil && f.Log().LogEndOffset() == end
	})
	frep := testnode.Replica(follower, topic, 0)
	fl := frep.Log()
	if fl.LogStartOffset() != newStart {
		t.Fatalf("follower log [%d, %d), want it to start at the leader's log start %d", fl.LogStartOffset(), fl.LogEndOffset(), newStart)
	}
	got, want := readLogRange(t, fl, newStart, end), readLogRange(t, lrep.Log(), newStart, end)
	if len(want) == 0 || !bytes.Equal(got, want) {
		t.Fatalf("follower bytes from %d differ from the leader's (%d and %d bytes)", newStart, len(got), len(want))
	}
	// No history came with the restart: the first fetched batch, at the new
	// log start, brought the only epoch.
	le, fe := lrep.Log().Epochs(), fl.Epochs()
	if len(fe) != 1 || fe[0].StartOffset != newStart || fe[0].Epoch != le[len(le)-1].Epoch {
		t.Fatalf("follower epochs %v (leader %v), want the leader's latest epoch from %d", fe, le, newStart)
	}
}

// readLogRange reads the batches of l from from to end, across segments.
func readLogRange(t *testing.T, l *segment.Log, from, end int64) []byte {
	t.Helper()
	var out []byte
	for off := from; off < end; {
		b, err := l.ReadBytes(off, 1<<20, end, true)
		if err != nil || len(b) == 0 {
			t.Fatalf("read at %d: %d bytes, %v", off, len(b), err)
		}
		out = append(out, b...)
		if err := batch.Split(b, func(h *batch.Header, _ []byte) error {
			off = h.NextOffset()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
