package broker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/testnode"
)

// produceN writes n records round-robin over the topic's partitions, with
// value "<tag>-<i>", and returns the end offset per partition.
func produceN(t *testing.T, addr, topic string, n int, tag string) map[int32]int64 {
	t.Helper()
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%s-%d", tag, i))}
	}
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ends := map[int32]int64{}
	for _, r := range recs {
		ends[r.Partition] = max(ends[r.Partition], r.Offset+1)
	}
	return ends
}

func createTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	resp, err := adm.CreateTopic(ctxT(t, 20*time.Second), partitions, 1, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
}

// committed fetches a group's committed offsets, retrying while the
// coordinator loads.
func committed(t *testing.T, adm *kadm.Client, grp string) kadm.OffsetResponses {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	for {
		resp, err := adm.FetchOffsets(ctx, grp)
		if err == nil && resp.Error() == nil {
			return resp
		}
		if ctx.Err() != nil {
			t.Fatalf("fetch offsets of %s: %v / %v", grp, err, resp.Error())
		}
	}
}

func TestGroupConsumeAndCommit(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	addr := n.KafkaAddr()
	adm := kadm.NewClient(newClient(t, addr))
	createTopic(t, adm, "gc", 3)
	ends := produceN(t, addr, "gc", 300, "v")

	cl := newClient(t, addr, kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("gc"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(6*time.Second))
	ctx := ctxT(t, 60*time.Second)
	seen := map[string]bool{}
	for len(seen) < 300 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 300", len(seen))
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := committed(t, adm, "g1")
	for p, end := range ends {
		o, ok := got.Lookup("gc", p)
		if !ok || o.At != end {
			t.Errorf("partition %d: committed %+v, want %d", p, o, end)
		}
	}
	described, err := adm.DescribeGroups(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	d := described["g1"]
	if d.State != "Stable" || len(d.Members) != 1 || d.Protocol != "cooperative-sticky" {
		t.Fatalf("describe: state %s, %d members, protocol %q, err %v", d.State, len(d.Members), d.Protocol, d.Err)
	}
}

var _ = sync.Mutex{}
var _ = context.Background
