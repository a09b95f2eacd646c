package tieringe2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/testnode"
)

// DeleteRecords on a tiered RF=3 topic whose history is mostly in the
// bucket (issue 16 item 3). It used to act on the leader's local log only:
// it answered the local log start as the low watermark, EARLIEST stayed 0,
// and a consumer from the earliest offset read the "deleted" records from
// the bucket, before and after a failover. Now the new log start is in the
// remote metadata: the answer, EARLIEST and a consumer reset to the start
// agree on it on the leader and, after the leader is gone, on the new one;
// the remote segments wholly below it are deleted; every record above it
// reads back.
func TestDeleteRecordsOnATieredTopicS3(t *testing.T) {
	env := startS3(t)
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 3, testnode.WithS3(env.srv.Endpoint, env.bucket),
		testnode.WithTiering(100*time.Millisecond), testnode.WithSession(3*time.Second))
	ctx := ctxT(t, 3*time.Minute)
	const topic = "trimmed"
	const n, cut = 20_000, 10_000
	adm := tieredTopicRF3(t, ctx, nodes, topic, n)
	leaderID := func() int32 {
		m, err := adm.Metadata(ctx, topic)
		if err != nil {
			return -1
		}
		return m.Topics[topic].Partitions[0].Leader
	}
	lid := leaderID()
	leader := nodes[lid-1]
	waitTiered(t, leader, topic, 5, cut+1) // the cut lies in the bucket only

	var os kadm.Offsets
	os.AddOffset(topic, 0, cut, -1)
	dr, err := adm.DeleteRecords(ctx, os)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := dr.Lookup(topic, 0)
	if !ok || r.Err != nil || r.LowWatermark != cut {
		t.Fatalf("DeleteRecords to %d: %+v (found %v), want low watermark %d", cut, r, ok, cut)
	}
	checkStart := func(addr, where string) {
		t.Helper()
		if got := listOffset(t, addr, topic, -2); got != cut {
			t.Fatalf("%s: EARLIEST %d, want %d", where, got, cut)
		}
		if got := firstFromStart(t, addr, topic); got != cut {
			t.Fatalf("%s: a consumer reset to the start read offset %d first, want %d", where, got, cut)
		}
	}
	checkStart(leader.KafkaAddr(), "leader")
	waitFor(t, 60*time.Second, "remote segments wholly below the new log start deleted", func() bool {
		for _, s := range finishedSegments(leader, topic) {
			if s.EndOffset < cut {
				return false
			}
		}
		return true
	})

	// Failover: the leader goes; its successor keeps the log start.
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := leader.Close(cctx); err != nil {
		t.Logf("close the leader: %v", err)
	}
	survivor := nodes[lid%3]
	adm2 := kadm.NewClient(newClient(t, survivor.KafkaAddr()))
	waitFor(t, 60*time.Second, "a new leader", func() bool {
		m, err := adm2.Metadata(ctx, topic)
		if err != nil || len(m.Topics[topic].Partitions) == 0 {
			return false
		}
		l := m.Topics[topic].Partitions[0].Leader
		return l > 0 && l != lid
	})
	m, err := adm2.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	newLeader := nodes[m.Topics[topic].Partitions[0].Leader-1]
	checkStart(newLeader.KafkaAddr(), "new leader")
	consumeFranz(t, newLeader.KafkaAddr(), topic, cut, n)
}

// firstFromStart consumes partition 0 of topic from offset 0 with the
// reset policy "earliest" and returns the offset of the first record read.
func firstFromStart(t testing.TB, addr, topic string) int64 {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	ctx := ctxT(t, 60*time.Second)
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("no record read from the start before the deadline")
		}
		var first int64 = -1
		fs.EachRecord(func(r *kgo.Record) {
			if first < 0 {
				first = r.Offset
			}
		})
		if first >= 0 {
			return first
		}
	}
}
