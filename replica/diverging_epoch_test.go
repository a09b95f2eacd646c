package replica_test

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
)

// TestFollowerTruncatesOnDivergingEpoch builds a real divergence with an
// unclean election and checks the leader's answers to it on the wire, the
// DivergingEpoch of a fetch response (KIP-320) and OffsetForLeaderEpoch,
// and that the old leader cuts its divergent tail.
//
// Two of three nodes hold an RF=2 topic (unclean.leader.election.enable);
// the third, no replica, keeps the control plane watching. Both replicas
// hold the first records, in epoch e0. The follower F stops; the leader L
// stops (the partition goes offline) and restarts alone (a new epoch e1)
// and writes more, which F never sees; L stops. F restarts and leads by an
// unclean election (epoch e2) with its log of epoch e0 only, and no one
// writes to it: F's history holds e2 from its election, at its log end, as
// Kafka's does. So OffsetForLeaderEpoch(e1) is answered {e0, end of F's
// log} (it was UNDEFINED when the history learnt an epoch at its first
// write), and a fetch at L's log end with LastFetchedEpoch e1 is answered
// DivergingEpoch with the same. L restarts as F's follower and cuts its e1
// tail there, with the one OffsetForLeaderEpoch of becoming follower
// (TestFetcherCutsOnDivergingEpoch covers the follower's
// DivergingEpoch handling, which that answer leaves nothing to do). Then
// both logs take new writes and must be identical up to the high watermark.
func TestFollowerTruncatesOnDivergingEpoch(t *testing.T) {
	const topic = "diverge"
	dir := t.TempDir()
	session := testnode.WithSession(2 * time.Second)
	lag := func(c *config.Broker) { c.ReplicaLagTimeMax = 2 * time.Second }
	nodes, srv := testnode.StartCluster(t, dir, 3, session, lag)
	// A restarted node can miss the partition change that its own
	// registration causes (it subscribes to control-plane events after the
	// store has started) and apply it only at a later reconcile, about 30 s
	// on: the waits for a restarted node's role allow for that.
	const restartWait = 60 * time.Second
	start := func(id int32) *broker.Node {
		return testnode.Start(t, filepath.Join(dir, "node", string(rune('a'+id-1))),
			testnode.WithNATS(srv.ClientURL()), testnode.WithNodeID(id), session, lag)
	}
	ctx := proctest.Context(t, 240*time.Second)
	adm := kadm.NewClient(testnode.Client(t, nodes[0].KafkaAddr()))
	proctest.Eventually(t, 20*time.Second, "3 brokers", func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 3
	})
	unclean, one := "true", "1"
	if r, err := adm.CreateTopic(ctx, 1, 2, map[string]*string{"unclean.leader.election.enable": &unclean, "min.insync.replicas": &one}, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	var lid, fid int32
	proctest.Eventually(t, 20*time.Second, "a leader", func() bool {
		m, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false
		}
		p := m.Topics[topic].Partitions[0]
		lid = p.Leader
		for _, r := range p.Replicas {
			if r != lid {
				fid = r
			}
		}
		return lid > 0 && fid > 0
	})
	l, f := nodes[lid-1], nodes[fid-1]
	// The admin client talks to the node that holds no replica.
	adm = kadm.NewClient(testnode.Client(t, nodes[6-lid-fid-1].KafkaAddr()))
	offline := func(what string) {
		t.Helper()
		proctest.Eventually(t, 30*time.Second, what, func() bool {
			m, err := adm.Metadata(ctx, topic)
			return err == nil && len(m.Topics[topic].Partitions) == 1 && m.Topics[topic].Partitions[0].Leader < 0
		})
	}
	produce := func(n *broker.Node, count int, tag string, acks kgo.Acks) {
		t.Helper()
		cl := testnode.Client(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(acks),
			kgo.DisableIdempotentWrite(), kgo.RecordDeliveryTimeout(30*time.Second))
		if err := cl.ProduceSync(ctx, testnode.Records(topic, count, tag)...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		cl.Close()
	}

	// Both replicas hold the first records, in epoch e0.
	produce(l, 20, "a", kgo.AllISRAcks())
	lrep := testnode.Replica(l, topic, 0)
	proctest.Eventually(t, 20*time.Second, "the follower caught up", func() bool {
		frep := testnode.Replica(f, topic, 0)
		return frep != nil && frep.HighWatermark() == lrep.Log().LogEndOffset()
	})
	shared := lrep.Log().LogEndOffset()
	e0 := lrep.LeaderEpoch()

	// F stops; L restarts alone (epoch e1) and writes a tail F never sees.
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	proctest.Eventually(t, 20*time.Second, "the ISR shrunk to the leader", func() bool {
		return slices.Equal(lrep.ISR(), []int32{lid})
	})
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	offline("the partition offline with both replicas down")
	l = start(lid)
	proctest.Eventually(t, restartWait, "the restarted leader leads in a new epoch", func() bool {
		r := testnode.Replica(l, topic, 0)
		return r != nil && r.IsLeader() && r.LeaderEpoch() > e0
	})
	lrep = testnode.Replica(l, topic, 0)
	e1 := lrep.LeaderEpoch()
	produce(l, 10, "zombie", kgo.LeaderAck())
	if es := lrep.Log().Epochs(); len(es) < 2 || es[len(es)-1] != (segment.EpochEntry{Epoch: e1, StartOffset: shared}) {
		t.Fatalf("leader epochs %v, want a last entry of epoch %d from %d", es, e1, shared)
	}
	tailEnd := lrep.Log().LogEndOffset()
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	offline("the partition offline with its zombie leader down")

	// F comes back and leads by an unclean election, with no e1 data.
	f = start(fid)
	var frep *partition.Replica
	proctest.Eventually(t, restartWait, "the follower leads by an unclean election", func() bool {
		frep = testnode.Replica(f, topic, 0)
		return frep != nil && frep.IsLeader() && frep.LeaderEpoch() > e1
	})
	e2 := frep.LeaderEpoch()
	fEpochs := frep.Log().Epochs()
	if n := len(fEpochs); frep.Log().LogEndOffset() != shared || n < 2 || fEpochs[n-2].Epoch != e0 ||
		fEpochs[n-1] != (segment.EpochEntry{Epoch: e2, StartOffset: shared}) {
		t.Fatalf("new leader: log end %d, epochs %v; want %d, epoch %d then epoch %d from its log end", frep.Log().LogEndOffset(), fEpochs, shared, e0, e2)
	}

	// On the wire, before L returns: OffsetForLeaderEpoch(e1) and a fetch
	// at L's log end both place e1 in F's epoch e0, ending at F's log end.
	// The node counts a request once its answer is written: poll for it.
	offsetForEpochs := func() float64 {
		v, _ := testnode.MetricValue(testnode.Scrape(t, f), "kafka_network_requestmetrics_requests_total", "request", "OffsetForLeaderEpoch")
		return v
	}
	counted := func(n float64) {
		t.Helper()
		proctest.Eventually(t, 10*time.Second, "OffsetForLeaderEpoch requests counted", func() bool { return offsetForEpochs() >= n })
	}
	before := offsetForEpochs()
	raw := testnode.Client(t, f.KafkaAddr())
	oe := kmsg.NewPtrOffsetForLeaderEpochRequest()
	oe.ReplicaID = lid
	oet := kmsg.NewOffsetForLeaderEpochRequestTopic()
	oet.Topic = topic
	oep := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	oep.CurrentLeaderEpoch, oep.LeaderEpoch = e2, e1
	oet.Partitions = append(oet.Partitions, oep)
	oe.Topics = append(oe.Topics, oet)
	oeResp, err := raw.Broker(int(fid)).Request(ctx, oe)
	if err != nil {
		t.Fatal(err)
	}
	if a := oeResp.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]; a.ErrorCode != 0 || a.LeaderEpoch != e0 || a.EndOffset != shared {
		t.Fatalf("OffsetForLeaderEpoch(%d): %+v, want epoch %d ending at %d", e1, a, e0, shared)
	}
	fr := kmsg.NewPtrFetchRequest()
	fr.ReplicaID, fr.ReplicaState.ID, fr.MaxWaitMillis, fr.MaxBytes = lid, lid, 0, 1<<20 // ReplicaState from v15 (KIP-903)
	frt := kmsg.NewFetchRequestTopic()
	frt.Topic, frt.TopicID = topic, testnode.TopicID(t, raw, topic)
	frp := kmsg.NewFetchRequestTopicPartition()
	frp.CurrentLeaderEpoch, frp.FetchOffset, frp.LastFetchedEpoch, frp.PartitionMaxBytes = e2, tailEnd, e1, 1<<20
	frt.Partitions = append(frt.Partitions, frp)
	fr.Topics = append(fr.Topics, frt)
	fResp, err := raw.Broker(int(fid)).Request(ctx, fr)
	if err != nil {
		t.Fatal(err)
	}
	if p := fResp.(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 ||
		p.DivergingEpoch.Epoch != e0 || p.DivergingEpoch.EndOffset != shared {
		t.Fatalf("fetch at %d in epoch %d: error %d, %d record bytes, DivergingEpoch %+v; want {%d %d}",
			tailEnd, e1, p.ErrorCode, len(p.RecordBatches), p.DivergingEpoch, e0, shared)
	}
	counted(before + 1) // this test's own
	before++

	// L returns as F's follower and cuts its e1 tail.
	l = start(lid)
	proctest.Eventually(t, restartWait, "the old leader's divergent tail cut", func() bool {
		r := testnode.Replica(l, topic, 0)
		return r != nil && !r.IsLeader() && r.Log().LogEndOffset() <= shared && r.Log().LatestEpoch() == e0
	})
	lrep = testnode.Replica(l, topic, 0)
	if got := lrep.Log().LogEndOffset(); got != shared {
		t.Fatalf("old leader cut to %d, want %d (the end of the shared log)", got, shared)
	}
	if frep.Log().LogEndOffset() != shared || !slices.Equal(frep.Log().Epochs(), fEpochs) {
		t.Fatalf("the leader's log moved (end %d, epochs %v) before the follower's cut", frep.Log().LogEndOffset(), frep.Log().Epochs())
	}
	counted(before + 1)
	if n := offsetForEpochs() - before; n != 1 {
		t.Fatalf("the follower sent %v OffsetForLeaderEpoch requests; want 1, on becoming follower", n)
	}

	// Both take new writes and agree up to the high watermark.
	produce(f, 15, "b", kgo.AllISRAcks())
	end := frep.Log().LogEndOffset()
	proctest.Eventually(t, 20*time.Second, "both replicas at the high watermark", func() bool {
		return lrep.Log().LogEndOffset() == end && lrep.HighWatermark() == end && frep.HighWatermark() == end
	})
	if got, want := readLogRange(t, lrep.Log(), 0, end), readLogRange(t, frep.Log(), 0, end); !bytes.Equal(got, want) {
		t.Fatalf("logs differ below the high watermark %d (%d and %d bytes)", end, len(got), len(want))
	}
	if got, want := lrep.Log().Epochs(), frep.Log().Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epoch histories differ: %v and %v", got, want)
	}
}
