package group

import (
	"context"

	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment/batch"
)

// oneReplica leads __consumer_offsets partition 0 only.
type oneReplica struct{ rep *partition.Replica }

func (o oneReplica) Leader(topic string, p int32) (*partition.Replica, error) {
	if topic != OffsetsTopic || p != 0 {
		return nil, partition.ErrUnknownTopicOrPartition
	}
	return o.rep, nil
}

func openOffsetsReplica(t testing.TB, dir string) *partition.Replica {
	t.Helper()
	rep, err := partition.Open(partition.Options{Dir: dir, Topic: OffsetsTopic, Partition: 0,
		Config: config.ResolveTopic(offsetsTopicConfigs, nil), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rep.SetLeadership(true, 0) // a replica opens as a follower
	return rep
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newTestCoordinator(t *testing.T, rep *partition.Replica, compactAfter int64) *Coordinator {
	c := New(Config{Partitions: 1, CompactAfterRecords: compactAfter, MinSessionTimeout: time.Second, Logger: quietLogger()},
		oneReplica{rep}, nil)
	t.Cleanup(c.Close)
	return c
}

// serve calls a handler the way the kafka server does, retrying while the
// coordinator loads.
func serve[R kmsg.Response](t *testing.T, h kafka.Handler, msg kmsg.Request, code func(R) int16) R {
	t.Helper()
	return serveConn(t, nil, h, msg, code)
}

func commitOne(t *testing.T, c *Coordinator, grp, topic string, p int32, offset int64) {
	t.Helper()
	req := kmsg.NewOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 8, grp, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = p, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := serve(t, c.handleOffsetCommit, &req, func(r *kmsg.OffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("commit %s %s-%d: %v", grp, topic, p, kerr.ErrorForCode(code))
	}
}

func fetchOne(t *testing.T, c *Coordinator, grp, topic string, p int32) int64 {
	t.Helper()
	req := offsetFetchOne(8, grp, topic, p)
	resp := serve(t, c.handleOffsetFetch, req, func(r *kmsg.OffsetFetchResponse) int16 { return r.Groups[0].ErrorCode })
	return resp.Groups[0].Topics[0].Partitions[0].Offset
}

// offsetFetchOne is an OffsetFetch at version of partition p of topic
// (by name) in grp.
func offsetFetchOne(version int16, grp, topic string, p int32) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = version
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = grp
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	return req
}

// logRecords counts the records between the log start and the high
// watermark, by key.
func logRecords(t *testing.T, rep *partition.Replica) (int, map[string]int) {
	t.Helper()
	total, byGroup := 0, map[string]int{}
	l := rep.Log()
	for off := l.LogStartOffset(); off < rep.HighWatermark(); {
		b, err := l.ReadBytes(off, 1<<20, rep.HighWatermark(), true)
		if err != nil || len(b) == 0 {
			t.Fatalf("read at %d: %v", off, err)
		}
		batch.Split(b, func(h *batch.Header, one []byte) error {
			off = h.NextOffset()
			return batch.ForEachRecord(one, 1<<20, func(r *batch.Record) error {
				k, err := decodeKey(r.Key)
				if err != nil {
					t.Fatal(err)
				}
				total++
				byGroup[k.group]++
				return nil
			})
		})
	}
	return total, byGroup
}

func TestCompactOffsetsPartition(t *testing.T) {
	dir := t.TempDir()
	rep := openOffsetsReplica(t, dir)
	c := newTestCoordinator(t, rep, 300)

	// 10 keys overwritten 100 times (background compactions start on the way),
	// and a group that is then deleted.
	for round := range 100 {
		for p := range int32(10) {
			commitOne(t, c, "busy", "t", p, int64(round))
		}
	}
	commitOne(t, c, "gone", "t", 0, 7)
	del := kmsg.NewDeleteGroupsRequest()
	del.Version, del.Groups = 2, []string{"gone"}
	if resp := serve(t, c.handleDeleteGroups, &del, func(r *kmsg.DeleteGroupsResponse) int16 { return r.Groups[0].ErrorCode }); resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(resp.Groups[0].ErrorCode))
	}

	// Wait out a background compaction, then compact once more ourselves.
	sh, ok := c.rt.Loaded(0)
	if !ok {
		t.Fatal("partition 0 is not loaded")
	}
	deadline := time.Now().Add(20 * time.Second)
	for !sh.compacting.CompareAndSwap(false, true) {
		if time.Now().After(deadline) {
			t.Fatal("background compaction never finished")
		}
		runtimeGosched()
	}
	if err := c.compact(context.Background(), sh); err != nil {
		t.Fatal(err)
	}
	sh.compacting.Store(false)

	total, byGroup := logRecords(t, rep)
	if total != 10 || byGroup["busy"] != 10 || byGroup["gone"] != 0 {
		t.Fatalf("after compaction: %d records %v, want the 10 live offsets of busy and nothing of gone", total, byGroup)
	}
	if rep.Log().LogStartOffset() == 0 {
		t.Fatal("log start did not move")
	}
	for p := range int32(10) {
		if got := fetchOne(t, c, "busy", "t", p); got != 99 {
			t.Fatalf("busy t-%d: %d, want 99", p, got)
		}
	}

	// A restart: the replica reopens from disk and a new coordinator loads
	// the compacted log.
	c.Close()
	if err := rep.Close(); err != nil {
		t.Fatal(err)
	}
	rep2 := openOffsetsReplica(t, dir)
	t.Cleanup(func() { rep2.Close() })
	if rep2.Log().LogStartOffset() != rep.Log().LogStartOffset() {
		t.Fatalf("log start %d after reopen, was %d", rep2.Log().LogStartOffset(), rep.Log().LogStartOffset())
	}
	c2 := newTestCoordinator(t, rep2, 300)
	for p := range int32(10) {
		if got := fetchOne(t, c2, "busy", "t", p); got != 99 {
			t.Fatalf("reloaded busy t-%d: %d, want 99", p, got)
		}
	}
	if got := fetchOne(t, c2, "gone", "t", 0); got != -1 {
		t.Fatalf("deleted group's offset came back: %d", got)
	}

}

func runtimeGosched() { runtime.Gosched() }
