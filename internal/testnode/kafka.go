package testnode

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment/batch"
)

// Client returns a franz-go client seeded with addr (a 20 s retry
// timeout, then opts), closed when the test ends.
func Client(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(20 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TopicID asks cl's cluster for topic's id: a raw Produce (v13) or Fetch
// (v13+) names its topics by id (KIP-516), and kgo fills in no id.
func TopicID(t testing.TB, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	m, err := kadm.NewClient(cl).Metadata(proctest.Context(t, 30*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	td, ok := m.Topics[topic]
	if !ok || td.Err != nil || td.ID == (kadm.TopicID{}) {
		t.Fatalf("topic %s: no id (%v)", topic, td.Err)
	}
	return td.ID
}

// Records returns n records for topic of varied keys and sizes, value
// "<tag>-<i>|" repeated, each with header "i" = its index.
func Records(topic string, n int, tag string) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{
			Topic:   topic,
			Key:     []byte(fmt.Sprintf("key-%d", i%17)),
			Value:   bytes.Repeat([]byte(fmt.Sprintf("%s-%06d|", tag, i)), 1+i%9),
			Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(fmt.Sprint(i))}},
		}
	}
	return recs
}

// ConsumeAll reads n records of topic from the start, keyed by the "i"
// header (Records), failing on a record consumed twice.
func ConsumeAll(t testing.TB, addr, topic string, n int) map[string]*kgo.Record {
	t.Helper()
	cl := Client(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := proctest.Context(t, 60*time.Second)
	got := map[string]*kgo.Record{}
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", len(got), n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			id := string(r.Headers[0].Value)
			if _, dup := got[id]; dup {
				t.Fatalf("record %s consumed twice", id)
			}
			got[id] = r
		})
	}
	return got
}

// CheckSame fails unless got (ConsumeAll) holds exactly the records sent,
// at the offsets and partitions their produce reported.
func CheckSame(t testing.TB, sent []*kgo.Record, got map[string]*kgo.Record) {
	t.Helper()
	if len(got) != len(sent) {
		t.Fatalf("got %d records, sent %d", len(got), len(sent))
	}
	for i, s := range sent {
		g := got[fmt.Sprint(i)]
		if g == nil || !bytes.Equal(g.Key, s.Key) || !bytes.Equal(g.Value, s.Value) || g.Offset != s.Offset || g.Partition != s.Partition {
			t.Fatalf("record %d differs: sent %+v, got %+v", i, s, g)
		}
	}
}

// CreateTopic creates topic with the given partitions and replication
// factor 1.
func CreateTopic(t testing.TB, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	resp, err := adm.CreateTopic(proctest.Context(t, 20*time.Second), partitions, 1, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
}

// ProduceN writes n records round-robin over the topic's partitions, with
// value "<tag>-<i>", and returns the end offset per partition.
func ProduceN(t testing.TB, addr, topic string, n int, tag string) map[int32]int64 {
	t.Helper()
	// A delivery timeout turns a stuck produce into an error, not a hang.
	cl := Client(t, addr, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordDeliveryTimeout(30*time.Second))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%s-%d", tag, i))}
	}
	if err := cl.ProduceSync(proctest.Context(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ends := map[int32]int64{}
	for _, r := range recs {
		ends[r.Partition] = max(ends[r.Partition], r.Offset+1)
	}
	return ends
}

// Ends is each partition's end offset after the records produced through
// Produce: what a group's commits must reach.
type Ends map[int32]int64

// Produce is ProduceN (n records tagged tag to topic through addr),
// keeping each partition's highest end in e.
func (e Ends) Produce(t testing.TB, addr, topic string, n int, tag string) {
	t.Helper()
	for p, end := range ProduceN(t, addr, topic, n, tag) {
		e[p] = max(e[p], end)
	}
}

// Committed fetches a group's committed offsets, retrying while the
// coordinator loads.
func Committed(t testing.TB, adm *kadm.Client, grp string) kadm.OffsetResponses {
	t.Helper()
	ctx := proctest.Context(t, 30*time.Second)
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

// Replica is n's local replica of topic-p, or nil.
func Replica(n *broker.Node, topic string, p int32) *partition.Replica {
	rep, ok := n.Replicas().Local(topic, p)
	if !ok {
		return nil
	}
	return rep
}

// InternalShape fails the test unless topic has partitions partitions,
// cleanup.policy=compact and, when minISR is not empty, that
// min.insync.replicas.
func InternalShape(ctx context.Context, t testing.TB, adm *kadm.Client, topic string, partitions int, minISR string) {
	t.Helper()
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(td[topic].Partitions); got != partitions {
		t.Fatalf("%s has %d partitions, want %d", topic, got, partitions)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe configs of %s: %v %v", topic, err, rc.Err)
	}
	want := map[string]string{"cleanup.policy": "compact"}
	if minISR != "" {
		want["min.insync.replicas"] = minISR
	}
	for _, c := range rc.Configs {
		if w, ok := want[c.Key]; ok {
			if c.MaybeValue() != w {
				t.Fatalf("%s: %s=%s, want %s", topic, c.Key, c.MaybeValue(), w)
			}
			delete(want, c.Key)
		}
	}
	if len(want) > 0 {
		t.Fatalf("%s: configs %v not described", topic, want)
	}
}

// OneRecordBatch is a record batch of one record, value "x", with no
// producer id: a Produce body for raw requests.
func OneRecordBatch(t testing.TB) []byte {
	t.Helper()
	b, err := batch.Build(nil, batch.NoProducer(), []batch.Record{{Value: []byte("x")}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ProduceInTxn writes n records to partition (of cl's default produce
// topic, with a manual partitioner) in one transaction of cl, ended with
// end; the values are "p<partition>-<i>". It fails the test on any error.
func ProduceInTxn(t testing.TB, ctx context.Context, cl *kgo.Client, partition int32, n int, end kgo.TransactionEndTry) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Partition: partition, Value: fmt.Appendf(nil, "p%d-%d", partition, i)}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, end); err != nil {
		t.Fatal(err)
	}
}
