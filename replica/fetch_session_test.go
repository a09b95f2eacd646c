package replica_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/replica"
)

// sessionsCluster starts two nodes with a topic of parts partitions
// (RF=2, min.insync.replicas=2) and 400 records written to it with
// acks=all by the producer it returns.
func sessionsCluster(t *testing.T, topic string, parts int32) ([]*broker.Node, context.Context, *kgo.Client) {
	t.Helper()
	nodes, ctx, _, prod := replicatedTopic(t, 2, topic, parts, 120*time.Second)
	if err := prod.ProduceSync(ctx, testnode.Records(topic, 400, "a")...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return nodes, ctx, prod
}

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
	nodes, ctx, prod := sessionsCluster(t, topic, parts)
	// Idle: each fetcher's last Fetch named nothing, and it has sent
	// incremental Fetches since its last full one.
	type mark struct{ fetches, full uint64 }
	seen := map[string]mark{}
	key := func(node int, st replica.FetcherStatus) string {
		return fmt.Sprintf("%d/%d/%d", node, st.Leader, st.Index)
	}
	var last string
	proctest.Eventually(t, 60*time.Second, "idle incremental follower fetches", func() bool {
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

	if err := prod.ProduceSync(ctx, testnode.Records(topic, 400, "b")...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ends := func(i int) map[int32]int64 {
		cl := testnode.Client(t, nodes[i].KafkaAddr())
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
	proctest.Eventually(t, 30*time.Second, "followers at their leaders' log end", func() bool {
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

// TestIdleFollowerRoundsVisitNothing: once every follower fetcher of a
// two-node cluster (one RF=2 topic of 40 partitions) fetches through its
// session and nothing is written, its rounds visit no partition: the
// leader's session holds every request as it is. A change of a follower's
// fetch position that no Fetch answer made (its remote log start, as the
// tiering loop sets it) still reaches the leader: the next round visits
// every partition again because the process counts such changes
// (partition.PositionChanges), not because of the periodic sweep, which
// this test puts an hour away. Before, every round visited all 40.
func TestIdleFollowerRoundsVisitNothing(t *testing.T) {
	replica.SetSweepEvery(t, time.Hour)
	const topic, parts = "quiet", 40
	nodes, ctx, _ := sessionsCluster(t, topic, parts)
	adm := kadm.NewClient(testnode.Client(t, nodes[0].KafkaAddr()))
	type mark struct{ fetches, visited uint64 }
	// quiet waits until every fetcher has sent three Fetches in a row
	// without visiting a partition.
	quiet := func(what string) {
		seen := map[string]mark{}
		var last string
		proctest.Eventually(t, 60*time.Second, what, func() bool {
			idle, total := 0, 0
			for i, n := range nodes {
				for _, st := range n.ReplicaFetchers() {
					total++
					k := fmt.Sprintf("%d/%d/%d", i, st.Leader, st.Index)
					m, ok := seen[k]
					if !ok || st.Visited != m.visited {
						seen[k] = mark{st.Fetches, st.Visited}
						last = fmt.Sprintf("node %d fetcher %s: %d fetches, %d partitions visited", i+1, k, st.Fetches, st.Visited)
						continue
					}
					if st.Fetches >= m.fetches+3 {
						idle++
					}
				}
			}
			return total > 0 && idle == total
		})
		t.Logf("%s: %s", what, last)
	}
	quiet("idle rounds visit no partition")

	// A follower replica, and its leader on the other node.
	var follower, leader *partition.Replica
	for _, rs := range nodes[1].Replicas().All() {
		if rs.Topic() == topic && !rs.IsLeader() && rs.HighWatermark() >= 6 {
			follower = rs
			break
		}
	}
	if follower == nil {
		t.Fatal("node 2 follows no partition of the topic with 6 records")
	}
	for _, rs := range nodes[0].Replicas().All() {
		if rs.Topic() == topic && rs.Partition() == follower.Partition() {
			leader = rs
		}
	}
	alive := func(int32) bool { return true }
	low := func() int64 {
		lw, err := leader.LowWatermark(alive)
		if err != nil {
			t.Fatalf("low watermark of %s-%d on node 1: %v", topic, leader.Partition(), err)
		}
		return lw
	}
	if lw := low(); lw != 0 {
		t.Fatalf("low watermark %d before the change, want 0", lw)
	}
	var before uint64
	for _, st := range nodes[1].ReplicaFetchers() {
		before += st.Visited
	}
	// The tiering loop's kind of change: a remote log start below the
	// local one, set outside any Fetch answer.
	follower.SetRemoteState(partition.RemoteState{LogStart: -1, CopiedNext: 0})
	if lw := low(); lw != 0 {
		t.Fatalf("low watermark %d, want 0", lw)
	}
	resp, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {follower.Partition(): kadm.Offset{At: 5}}})
	if err != nil || resp.Error() != nil {
		t.Fatalf("DeleteRecords: %v %v", err, resp.Error())
	}
	proctest.Eventually(t, 30*time.Second, "the follower's log start at 5", func() bool { return low() == 5 })
	quiet("idle again after DeleteRecords")
	follower.SetRemoteState(partition.RemoteState{LogStart: 2, CopiedNext: 0})
	proctest.Eventually(t, 30*time.Second, "the leader to learn the follower's log start 2", func() bool { return low() == 2 })
	var after uint64
	for _, st := range nodes[1].ReplicaFetchers() {
		after += st.Visited
	}
	if after < before+parts/2 {
		t.Errorf("node 2's fetchers visited %d partitions in all, %d before: no sweep", after, before)
	}
}
