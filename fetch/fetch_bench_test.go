package fetch

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/benchpair"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/quota"
	"github.com/shale-io/shale/segment/batch"
)

// BenchmarkFetchChecks is one consumer Fetch of a one-record batch from
// one local partition through the handler (the answer's records are a
// file range, not read), as a node runs it with no quota and no ACL
// configured: with the node's quota manager holding no quota (every fetch
// still asks it) and no authorizer (authz off: nil), ns/op; beside it, in
// the same loop (benchpair), the same fetch without a quota manager,
// bypassed-ns/op. make bench prints the ratio.
func BenchmarkFetchChecks(b *testing.B) {
	rep, err := partition.Open(partition.Options{Dir: b.TempDir(), Topic: "bench", Partition: 0,
		Config: config.ResolveTopic(nil, nil), Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	defer rep.Close()
	rep.SetAssignment(1, []int32{1}, []int32{1})
	rep.SetLeadership(true, 0)
	opts := batch.NoProducer()
	opts.FirstTimestamp = time.Now().UnixMilli()
	recs, err := batch.Build(nil, opts, []batch.Record{{Value: []byte("v")}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := rep.AppendLeader(recs); err != nil {
		b.Fatal(err)
	}
	checks := &fetchHandler{leaders: leaders{"bench-0": rep}, log: quiet(),
		opts: buildOptions([]Option{WithQuotas(quota.NewManager(quota.Config{})), WithAuthorizer(nil)})}
	bypassed := &fetchHandler{leaders: leaders{"bench-0": rep}, log: quiet(), opts: buildOptions(nil)}
	r := kmsg.NewPtrFetchRequest()
	r.SetVersion(12)
	r.ReplicaID, r.MaxWaitMillis, r.MinBytes, r.MaxBytes = -1, 500, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "bench"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	conn := &kafka.ConnInfo{ID: 1, Listener: "PLAINTEXT", Principal: kafka.AnonymousPrincipal}
	ctx := context.Background()
	fetch := func(h *fetchHandler) func() {
		return func() {
			reply, err := h.handle(ctx, &kafka.Request{Key: r.Key(), Version: 12, ClientID: "bench", Msg: r, Conn: conn})
			if err != nil {
				b.Fatal(err)
			}
			if n := reply.Body.Len(); n < len(recs) {
				b.Fatalf("a %d-byte answer, without the %d-byte batch", n, len(recs))
			}
		}
	}
	benchpair.Run(b, fetch(checks), fetch(bypassed), "bypassed-ns/op")
}
