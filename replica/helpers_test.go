package replica_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/partition"

	"github.com/nats-io/nats.go"
)

// waitFor polls cond until it holds, failing the test at the deadline.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := proctest.WaitFor(d, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context { return proctest.Context(t, d) }

func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(20 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// makeRecords builds n records of varied sizes, each with an "i" header.
func makeRecords(topic string, n int, tag string) []*kgo.Record {
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

// consumeAll reads n records of topic from the start, keyed by the "i" header.
func consumeAll(t *testing.T, addr, topic string, n int) map[string]*kgo.Record {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ctxT(t, 60*time.Second)
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

// replicaOn is n's local replica of topic-p, or nil.
func replicaOn(n *broker.Node, topic string, p int32) *partition.Replica {
	rep, ok := n.Replicas().Local(topic, p)
	if !ok {
		return nil
	}
	return rep
}

// natsStore starts a NATS server with its store under dir and opens a
// control-plane store on it, registering broker id (at a port nothing
// dials) for CreateTopic to place replicas on; both close at cleanup.
func natsStore(t *testing.T, ctx context.Context, dir string, id int32) *controlplane.Store {
	t.Helper()
	return natsStores(t, ctx, dir, id)[0]
}

// natsStores is natsStore for several brokers on the same NATS server,
// each registered through its own store and connection.
func natsStores(t *testing.T, ctx context.Context, dir string, ids ...int32) []*controlplane.Store {
	t.Helper()
	srv := testnode.StartNATS(t, dir)
	var out []*controlplane.Store
	for _, id := range ids {
		out = append(out, storeOn(t, ctx, func() (*nats.Conn, error) { return srv.Connect() }, id))
	}
	return out
}

func storeOn(t *testing.T, ctx context.Context, connect func() (*nats.Conn, error), id int32) *controlplane.Store {
	t.Helper()
	nc, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	st, err := controlplane.Open(ctx, nc, controlplane.StoreConfig{Logger: testnode.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if err := st.RegisterBroker(ctx, controlplane.Broker{NodeID: id, Host: "127.0.0.1", Port: 1}); err != nil {
		t.Fatal(err)
	}
	return st
}
