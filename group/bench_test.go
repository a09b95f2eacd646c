package group

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/kafka"
)

// BenchmarkOffsetCommit: one OffsetCommit of 8 partitions through the
// handler, the group's goroutine and an append to a local offsets replica
// (no network). Compare with BenchmarkOffsetFetch, the same hop without
// the append.
func BenchmarkOffsetCommit(b *testing.B) {
	rep := openOffsetsReplica(b, b.TempDir())
	defer rep.Close()
	c := New(Config{Partitions: 1, Logger: quietLogger()}, oneReplica{rep}, nil)
	defer c.Close()
	req := kmsg.NewOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 8, "bench", -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "topic"
	for p := range int32(8) {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	ctx := context.Background()
	run := func(h kafka.Handler, msg kmsg.Request) {
		for {
			reply, err := h(ctx, &kafka.Request{Key: msg.Key(), Version: msg.GetVersion(), Msg: msg})
			if err != nil {
				b.Fatal(err)
			}
			resp, err := reply.Wait(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if r, ok := resp.(*kmsg.OffsetCommitResponse); ok && r.Topics[0].Partitions[0].ErrorCode != 0 {
				continue // loading
			}
			if r, ok := resp.(*kmsg.OffsetFetchResponse); ok && r.Groups[0].ErrorCode != 0 {
				continue
			}
			return
		}
	}
	run(c.handleOffsetCommit, &req)
	b.Run("commit", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			for p := range req.Topics[0].Partitions {
				req.Topics[0].Partitions[p].Offset = int64(i)
			}
			run(c.handleOffsetCommit, &req)
		}
	})
	fetch := kmsg.NewOffsetFetchRequest()
	fetch.Version = 8
	fg := kmsg.NewOffsetFetchRequestGroup()
	fg.Group = "bench"
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{fg}
	b.Run("fetch", func(b *testing.B) {
		for b.Loop() {
			run(c.handleOffsetFetch, &fetch)
		}
	})
}
