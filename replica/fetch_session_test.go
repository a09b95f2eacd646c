package replica_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/replica"
)

// TestFollowerFetchSessionIdle: two nodes, one RF=2 topic of 40 partitions
// with min.insync.replicas=2. Once the records produced with acks=all are
// replicated, every follower fetcher fetches incrementally (KIP-227): its
// Fetch requests name no partition, and it is not sending full ones. A
// second acks=all produce still completes (the followers fetch what is new
// through their sessions and the high watermark moves), and every
// partition's follower ends at its leader's log end. Before the follower
// used sessions, each Fetch named every partition it followed.
func TestFollowerFetchSessionIdle(t *testing.T) {
	const topic, parts = "sessions", 40
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 2)
	ctx := ctxT(t, 120*time.Second)
	adm := kadm.NewClient(newClient(t, nodes[0].KafkaAddr()))
	waitFor(t, 20*time.Second, "2 brokers", func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 2
	})
	two := "2"
	if _, err := adm.CreateTopic(ctx, parts, 2, map[string]*string{"min.insync.replicas": &two}, topic); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, nodes[0].KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := prod.ProduceSync(ctx, makeRecords(topic, 400, "a")...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Idle: each fetcher's last Fetch named nothing, and it has sent
	// incremental Fetches since its last full one.
	type mark struct{ fetches, full uint64 }
	seen := map[string]mark{}
	key := func(node int, st replica.FetcherStatus) string {
		return fmt.Sprintf("%d/%d/%d", node, st.Leader, st.Index)
	}
	var last string
	waitFor(t, 60*time.Second, "idle incremental follower fetches", func() bool {
		idle := 0
		total := 0
		for i, n := range nodes {
			for _, st := range n.ReplicaFetchers() {
				total++
				k := key(i, st)
				m, ok := seen[k]
				if !ok || st.FullFetches != m.full {
					seen[k] = mark{st.Fetches, st.FullFetches} // a full Fetch since: start counting again
					last = fmt.Sprintf("node %d fetcher %s: %d fetches, %d full", i+1, k, st.Fetches, st.FullFetches)
					continue
				}
				if st.Fetches >= m.fetches+3 && st.LastNamed == 0 {
					idle++
				} else {
					last = fmt.Sprintf("node %d fetcher %s: %d fetches (%d at mark), %d full, last named %d", i+1, k, st.Fetches, m.fetches, st.FullFetches, st.LastNamed)
				}
			}
		}
		return total > 0 && idle == total
	})
	t.Logf("idle: %s", last)

	if err := prod.ProduceSync(ctx, makeRecords(topic, 400, "b")...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ends := func(i int) map[int32]int64 {
		cl := newClient(t, nodes[i].KafkaAddr())
		lo, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]int64{}
		lo.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
		return out
	}
	want := ends(0)
	var total int64
	for _, o := range want {
		total += o
	}
	if total != 800 {
		t.Fatalf("end offsets add up to %d, want 800", total)
	}
	// Every follower replica holds what its leader holds.
	waitFor(t, 30*time.Second, "followers at their leaders' log end", func() bool {
		for _, n := range nodes {
			for _, rs := range n.Replicas().All() {
				if rs.Topic() != topic || rs.IsLeader() {
					continue
				}
				if rs.Log().LogEndOffset() != want[rs.Partition()] || rs.HighWatermark() != want[rs.Partition()] {
					last = fmt.Sprintf("%s-%d: follower log end %d, high watermark %d, want %d", topic, rs.Partition(),
						rs.Log().LogEndOffset(), rs.HighWatermark(), want[rs.Partition()])
					return false
				}
			}
		}
		return true
	})
}
