package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/benchpair"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/quota"
	"github.com/shale-io/shale/segment/batch"
)

// BenchmarkProduceChecks is one acks=1 Produce of a one-record batch to one
// partition through the handler, as a node runs it with no quota and no
// ACL configured: with the node's quota manager holding no quota (every
// request still asks it) and no authorizer (authz off: nil), ns/op; beside
// it, in the same loop (benchpair), the same produce to the same partition
// without a quota manager, bypassed-ns/op. make bench prints the ratio.
func BenchmarkProduceChecks(b *testing.B) {
	rep := leaderReplica(b, "bench", nil)
	checks := &produceHandler{leaders: leaders{"bench-0": rep}, log: quiet(), quotas: quota.NewManager(quota.Config{})}
	bypassed := &produceHandler{leaders: leaders{"bench-0": rep}, log: quiet()}
	r := kmsg.NewPtrProduceRequest()
	r.SetVersion(9)
	r.Acks, r.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "bench"
	rp := kmsg.NewProduceRequestTopicPartition()
	// Timestamped now: a batch at 0 would be older than segment.ms and roll
	// the segment at every append.
	opts := batch.NoProducer()
	opts.FirstTimestamp = time.Now().UnixMilli()
	recs, err := batch.Build(nil, opts, []batch.Record{{Value: []byte("v")}})
	if err != nil {
		b.Fatal(err)
	}
	rp.Records = recs
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	conn := &kafka.ConnInfo{ID: 1, Listener: "PLAINTEXT", Principal: kafka.AnonymousPrincipal}
	ctx := context.Background()
	produce := func(h *produceHandler) func() {
		return func() {
			reply, err := h.handle(ctx, &kafka.Request{Key: r.Key(), Version: 9, ClientID: "bench", Msg: r, Conn: conn})
			if err != nil {
				b.Fatal(err)
			}
			if c := reply.Response.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
				b.Fatalf("error code %d", c)
			}
		}
	}
	benchpair.Run(b, produce(checks), produce(bypassed), "bypassed-ns/op")
}
