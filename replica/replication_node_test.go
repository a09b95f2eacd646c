package replica_test

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestReplicationRF3 produces acks=all to an RF=3, min.insync.replicas=2
// topic, checks that every replica holds the same bytes up to the high
// watermark, stops the leader, and checks that nothing acknowledged is lost
// and nothing is duplicated across the failover.
func TestReplicationRF3(t *testing.T) {
	nodes, ctx, adm, prod := replicatedTopic(t, 3, "rep", 2, 90*time.Second, testnode.WithSession(2*time.Second))
	first := testnode.Records("rep", 400, "a")
	if err := prod.ProduceSync(ctx, first...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Every replica converges to the same bytes below the high watermark.
	for p := int32(0); p < 2; p++ {
		proctest.Eventually(t, 20*time.Second, "replicas identical", func() bool {
			var ref []byte
			for i, n := range nodes {
				rep := testnode.Replica(n, "rep", p)
				if rep == nil {
					return false
				}
				b, err := rep.Log().ReadBytes(0, 64<<20, rep.Log().LogEndOffset(), true)
				if err != nil {
					return false
				}
				if i == 0 {
					ref = b
				} else if !bytes.Equal(ref, b) {
					return false
				}
			}
			return len(ref) > 0
		})
	}
	// Stop the leader of partition 0; the producer carries on through the new one.
	m, _ := adm.Metadata(ctx, "rep")
	leader := m.Topics["rep"].Partitions[0].Leader
	var survivor *broker.Node
	for i, n := range nodes {
		if int32(i+1) != leader && survivor == nil {
			survivor = n
		}
	}
	if err := nodes[leader-1].Close(ctx); err != nil {
		t.Fatal(err)
	}
	prod2 := testnode.Client(t, survivor.KafkaAddr(), kgo.DefaultProduceTopic("rep"), kgo.RequiredAcks(kgo.AllISRAcks()))
	second := testnode.Records("rep", 200, "b")
	for i, r := range second {
		r.Headers[0].Value = []byte(fmtInt(400 + i))
	}
	if err := prod2.ProduceSync(ctx, second...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := testnode.ConsumeAll(t, survivor.KafkaAddr(), "rep", 600)
	testnode.CheckSame(t, append(first, second...), got)
}

func fmtInt(i int) string { return strconv.Itoa(i) }
