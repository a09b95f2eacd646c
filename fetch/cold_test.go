package fetch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/tiering/coldread"
)

// The fetch handler's cold path against a RemoteReader that serves the
// bytes the partition held before its first segments were deleted locally:
// the routing, budgets, encoding and error mapping are tested here; the
// real remote reader (tiering/coldread) has its own tests over a bucket.

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

const tsBase = 1_700_000_000_000

// memRemote is a RemoteReader over record batches held in memory.
type memRemote struct {
	batches []byte // whole batches from offset start
	start   int64
	failing atomic.Bool // Read and OffsetForTimestamp fail
	block   atomic.Bool // Read blocks until ctx ends
	reads   atomic.Int64
}

// errBucketDown is what the cold reader returns when the bucket fails: its
// ErrRemoteRead around the object store's transient error.
var errBucketDown = fmt.Errorf("%w: GET: %w: bucket: 503", coldread.ErrRemoteRead, objstore.ErrTransient)

func (m *memRemote) LogStartOffset(string, int32) int64 { return m.start }

func (m *memRemote) LastTieredOffset(string, int32) int64 {
	last := int64(-1)
	batch.Split(m.batches, func(h *batch.Header, _ []byte) error { last = h.LastOffset(); return nil })
	return last
}

func (m *memRemote) Read(ctx context.Context, _ string, _ int32, offset int64, maxBytes int, minOne bool) ([]byte, int64, error) {
	m.reads.Add(1)
	if m.block.Load() {
		<-ctx.Done()
		return nil, offset, ctx.Err()
	}
	if m.failing.Load() {
		return nil, offset, errBucketDown
	}
	if offset < m.start {
		return nil, offset, fmt.Errorf("%w: below %d", segment.ErrOffsetOutOfRange, m.start)
	}
	var out []byte
	next := offset
	batch.Split(m.batches, func(h *batch.Header, b []byte) error {
		if h.LastOffset() < offset {
			return nil
		}
		if len(out)+len(b) > maxBytes && !(minOne && len(out) == 0) {
			return io.EOF
		}
		out, next = append(out, b...), h.NextOffset()
		return nil
	})
	return out, next, nil
}

func (m *memRemote) OffsetForTimestamp(_ context.Context, _ string, _ int32, ts int64) (int64, int64, bool, error) {
	if m.failing.Load() {
		return -1, -1, false, errBucketDown
	}
	off, t, ok := int64(-1), int64(-1), false
	batch.Split(m.batches, func(h *batch.Header, b []byte) error {
		return batch.ForEachRecord(b, 1<<20, func(r *batch.Record) error {
			if h.FirstTimestamp+r.TimestampDelta >= ts {
				off, t, ok = h.BaseOffset+int64(r.OffsetDelta), h.FirstTimestamp+r.TimestampDelta, true
				return io.EOF
			}
			return nil
		})
	})
	return off, t, ok, nil
}

type leaders map[string]*partition.Replica

func (l leaders) Leader(topic string, p int32) (*partition.Replica, error) {
	if r, ok := l[fmt.Sprintf("%s-%d", topic, p)]; ok {
		return r, nil
	}
	return nil, partition.ErrUnknownTopicOrPartition
}

// tieredReplica is a replica of n records (10 per batch, record i stamped
// tsBase+10*i) whose segments below about half are deleted locally and held
// by a memRemote instead. all is every batch from offset 0.
func tieredReplica(t *testing.T, topic string, n int) (*partition.Replica, *memRemote, []byte) {
	t.Helper()
	rep, err := partition.Open(partition.Options{Dir: t.TempDir(), Topic: topic, Partition: 0,
		Config: config.ResolveTopic(map[string]string{config.SegmentBytes: "4096", config.RemoteStorageEnable: "true"}, nil), LeaderEpoch: 0, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	rep.SetLeadership(true, 0) // a replica opens as a follower
	t.Cleanup(func() { rep.Close() })
	for i := 0; i < n; i += 10 {
		var recs []batch.Record
		for j := i; j < i+10; j++ {
			recs = append(recs, batch.Record{TimestampDelta: int64(10 * (j - i)), Value: fmt.Appendf(nil, "%s-value-%06d", topic, j)})
		}
		opts := batch.NoProducer()
		opts.FirstTimestamp = tsBase + int64(10*i)
		b, err := batch.Build(nil, opts, recs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rep.AppendLeader(b); err != nil {
			t.Fatal(err)
		}
	}
	var all []byte
	for off := int64(0); off < int64(n); {
		b, err := rep.Log().ReadBytes(off, 1<<30, 1<<62, true)
		if err != nil || len(b) == 0 {
			t.Fatalf("read %d: %v", off, err)
		}
		all = append(all, b...)
		batch.Split(b, func(h *batch.Header, _ []byte) error { off = h.NextOffset(); return nil })
	}
	if _, err := rep.DeleteRecordsBefore(int64(n / 2)); err != nil {
		t.Fatal(err)
	}
	if ls := rep.Log().LogStartOffset(); ls == 0 || ls > int64(n/2) {
		t.Fatalf("local log start %d after deleting below %d", ls, n/2)
	}
	return rep, &memRemote{batches: all}, all
}

// fetchOnce sends one Fetch for the given partitions through the handler and
// decodes the answer with kmsg.
func fetchOnce(t *testing.T, h *fetchHandler, v int16, parts map[string]int64, maxBytes int32) *kmsg.FetchResponse {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = v, 10, 1, maxBytes
	for _, topic := range []string{"cold", "hot", "other"} {
		off, ok := parts[topic]
		if !ok {
			continue
		}
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = off, 64<<10, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	reply, err := h.handle(proctest.Context(t, 30*time.Second), &kafka.Request{Key: 1, Version: v, Msg: req})
	if err != nil {
		t.Fatal(err)
	}
	body := reply.Body.(*body)
	var buf bytes.Buffer
	for _, p := range body.pieces {
		switch {
		case p.file != nil:
			b := make([]byte, p.size)
			if _, err := p.file.ReadAt(b, p.pos); err != nil {
				t.Fatal(err)
			}
			buf.Write(b)
		case p.mem != nil:
			buf.Write(p.mem)
		default:
			buf.Write(body.buf[p.from:p.to])
		}
	}
	if buf.Len() != body.Len() {
		t.Fatalf("body Len %d, wrote %d", body.Len(), buf.Len())
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = v
	if err := resp.ReadFrom(buf.Bytes()); err != nil {
		t.Fatalf("v%d: kmsg cannot decode: %v", v, err)
	}
	return resp
}

func part(t *testing.T, resp *kmsg.FetchResponse, topic string) kmsg.FetchResponseTopicPartition {
	t.Helper()
	for _, rt := range resp.Topics {
		if rt.Topic == topic && len(rt.Partitions) == 1 {
			return rt.Partitions[0]
		}
	}
	t.Fatalf("no %s in the response", topic)
	return kmsg.FetchResponseTopicPartition{}
}

func nextOffset(t *testing.T, b []byte) int64 {
	t.Helper()
	next := int64(-1)
	if err := batch.Split(b, func(h *batch.Header, _ []byte) error { next = h.NextOffset(); return nil }); err != nil {
		t.Fatal(err)
	}
	return next
}

func TestFetchReplaysAcrossRemoteAndLocal(t *testing.T) {
	rep, remote, all := tieredReplica(t, "cold", 2000)
	h := &fetchHandler{leaders: leaders{"cold-0": rep}, log: quiet(), opts: buildOptions([]Option{WithRemote(remote)})}
	for _, v := range []int16{4, 11, 12} {
		var got []byte
		for off := int64(0); off < 2000; {
			p := part(t, fetchOnce(t, h, v, map[string]int64{"cold": off}, 5000), "cold")
			if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
				t.Fatalf("v%d offset %d: error %d, %d bytes", v, off, p.ErrorCode, len(p.RecordBatches))
			}
			if v >= 5 && p.LogStartOffset != 0 {
				t.Fatalf("v%d: log start %d, want the remote log start 0", v, p.LogStartOffset)
			}
			if p.HighWatermark != 2000 {
				t.Fatalf("v%d: high watermark %d", v, p.HighWatermark)
			}
			got = append(got, p.RecordBatches...)
			off = nextOffset(t, p.RecordBatches)
		}
		if !bytes.Equal(got, all) {
			t.Fatalf("v%d: replay across remote and local differs (%d bytes, want %d)", v, len(got), len(all))
		}
	}
	if remote.reads.Load() == 0 {
		t.Fatal("the remote reader was never asked")
	}
	// Below the remote log start: OFFSET_OUT_OF_RANGE.
	remote.start = 100
	if p := part(t, fetchOnce(t, h, 12, map[string]int64{"cold": 50}, 5000), "cold"); p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("below the remote log start: error %d", p.ErrorCode)
	}
}

func TestFetchColdAndHotInOneRequest(t *testing.T) {
	cold, remote, coldAll := tieredReplica(t, "cold", 1000)
	other, remote2, otherAll := tieredReplica(t, "other", 1000)
	hot, _, hotAll := tieredReplica(t, "hot", 1000)
	two := &twoRemotes{"cold": remote, "other": remote2}
	h := &fetchHandler{leaders: leaders{"cold-0": cold, "hot-0": hot, "other-0": other}, log: quiet(),
		opts: buildOptions([]Option{WithRemote(two)})}
	hotStart := hot.Log().LogStartOffset()
	resp := fetchOnce(t, h, 12, map[string]int64{"cold": 0, "other": 0, "hot": hotStart}, 1<<20)
	for topic, all := range map[string][]byte{"cold": coldAll, "other": otherAll} {
		p := part(t, resp, topic)
		if p.ErrorCode != 0 || len(p.RecordBatches) == 0 || !bytes.HasPrefix(all, p.RecordBatches) {
			t.Fatalf("%s from remote: error %d, %d bytes", topic, p.ErrorCode, len(p.RecordBatches))
		}
	}
	if p := part(t, resp, "hot"); p.ErrorCode != 0 || len(p.RecordBatches) == 0 || !bytes.Contains(hotAll, p.RecordBatches) {
		t.Fatalf("hot partition: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}

	// The bucket fails: the cold partitions get a retriable error, the hot
	// one still its data.
	remote.failing.Store(true)
	resp = fetchOnce(t, h, 12, map[string]int64{"cold": 0, "hot": hotStart}, 1<<20)
	if p := part(t, resp, "cold"); p.ErrorCode != kerr.KafkaStorageError.Code || len(p.RecordBatches) != 0 {
		t.Fatalf("cold with a failing bucket: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}
	if p := part(t, resp, "hot"); p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Fatalf("hot beside a failing cold read: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}
	remote.failing.Store(false)
	if p := part(t, fetchOnce(t, h, 12, map[string]int64{"cold": 0}, 1<<20), "cold"); p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Fatalf("cold after recovery: error %d", p.ErrorCode)
	}
}

func TestFetchColdReadPastItsWaitTimesOut(t *testing.T) {
	rep, remote, _ := tieredReplica(t, "cold", 1000)
	hot, _, _ := tieredReplica(t, "hot", 1000)
	h := &fetchHandler{leaders: leaders{"cold-0": rep, "hot-0": hot}, log: quiet(),
		opts: buildOptions([]Option{WithRemote(remote), WithRemoteMinWait(20 * time.Millisecond)})}
	remote.block.Store(true)
	resp := fetchOnce(t, h, 12, map[string]int64{"cold": 0, "hot": hot.Log().LogStartOffset()}, 1<<20)
	if p := part(t, resp, "cold"); p.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("a remote read past the wait: error %d, want REQUEST_TIMED_OUT", p.ErrorCode)
	}
	if p := part(t, resp, "hot"); p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Fatalf("hot beside a slow cold read: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}
}

func TestFetchGapBelowLocalIsNotAnEmptySuccess(t *testing.T) {
	rep, remote, all := tieredReplica(t, "cold", 1000)
	// The remote copy ends well below the local log start.
	var short []byte
	batch.Split(all, func(h *batch.Header, b []byte) error {
		if h.NextOffset() <= 100 {
			short = append(short, b...)
		}
		return nil
	})
	remote.batches = short
	h := &fetchHandler{leaders: leaders{"cold-0": rep}, log: quiet(), opts: buildOptions([]Option{WithRemote(remote)})}
	if p := part(t, fetchOnce(t, h, 12, map[string]int64{"cold": 200}, 1<<20), "cold"); p.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("offset in a gap: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}
}

// twoRemotes routes by topic; a topic it does not hold has no remote data.
type twoRemotes map[string]*memRemote

func (m twoRemotes) LogStartOffset(t string, p int32) int64 {
	if m[t] == nil {
		return -1
	}
	return m[t].LogStartOffset(t, p)
}
func (m twoRemotes) LastTieredOffset(t string, p int32) int64 { return m[t].LastTieredOffset(t, p) }
func (m twoRemotes) Read(ctx context.Context, t string, p int32, o int64, n int, one bool) ([]byte, int64, error) {
	return m[t].Read(ctx, t, p, o, n, one)
}
func (m twoRemotes) OffsetForTimestamp(ctx context.Context, t string, p int32, ts int64) (int64, int64, bool, error) {
	return m[t].OffsetForTimestamp(ctx, t, p, ts)
}

func listOffset(t *testing.T, h *listOffsetsHandler, ts int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	return listOffsetAt(t, h, 9, ts)
}

func listOffsetAt(t *testing.T, h *listOffsetsHandler, v int16, ts int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = v
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "cold"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	reply, err := h.handle(proctest.Context(t, 30*time.Second), &kafka.Request{Key: 2, Version: v, Msg: req})
	if err != nil {
		t.Fatal(err)
	}
	return reply.Response.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
}

func TestListOffsetsAcrossRemoteAndLocal(t *testing.T) {
	rep, remote, _ := tieredReplica(t, "cold", 2000)
	localStart := rep.Log().LogStartOffset()
	h := &listOffsetsHandler{leaders: leaders{"cold-0": rep}, log: quiet(), remote: remote}
	for _, c := range []struct {
		ts, want int64
	}{
		{-2, 0},          // EARLIEST: the remote log start
		{-4, localStart}, // EARLIEST_LOCAL
		{-5, 1999},       // LATEST_TIERED
		{-1, 2000},       // LATEST
		{tsBase + 10*37, 37},
		{tsBase + 10*37 - 3, 37},
		{tsBase + 10*1500, 1500},
		{0, 0},
		{tsBase + 10*5000, -1},
	} {
		p := listOffset(t, h, c.ts)
		if p.ErrorCode != 0 || p.Offset != c.want {
			t.Fatalf("timestamp %d: offset %d error %d, want %d", c.ts, p.Offset, p.ErrorCode, c.want)
		}
	}
	// A remote failure is an error, not a wrong answer from local data.
	remote.failing.Store(true)
	if p := listOffset(t, h, tsBase+10*37); p.ErrorCode != kerr.KafkaStorageError.Code || p.Offset != -1 {
		t.Fatalf("lookup with a failing bucket: offset %d error %d", p.Offset, p.ErrorCode)
	}
	// Without tiering: EARLIEST is local, LATEST_TIERED -1.
	local := &listOffsetsHandler{leaders: leaders{"cold-0": rep}, log: quiet()}
	if p := listOffset(t, local, -2); p.Offset != localStart {
		t.Fatalf("EARLIEST without tiering: %d", p.Offset)
	}
	if p := listOffset(t, local, -5); p.Offset != -1 {
		t.Fatalf("LATEST_TIERED without tiering: %d", p.Offset)
	}
}

// TestListOffsetsEarliestPendingUpload: EARLIEST_PENDING_UPLOAD (-6, v11,
// KIP-1023) on a tiered partition is the offset after the last tiered one,
// with its leader epoch; while nothing is tiered, the log start; on a
// partition without tiering, -1, as Kafka's UnifiedLog answers. Before v11,
// -6 is UNSUPPORTED_VERSION, as is any timestamp sentinel before its
// version or one Kafka does not define.
func TestListOffsetsEarliestPendingUpload(t *testing.T) {
	rep, remote, all := tieredReplica(t, "cold", 2000)
	h := &listOffsetsHandler{leaders: leaders{"cold-0": rep}, log: quiet(), remote: remote}
	if p := listOffsetAt(t, h, 11, -6); p.ErrorCode != 0 || p.Offset != 2000 {
		t.Fatalf("everything tiered: offset %d error %d, want 2000 (the log end)", p.Offset, p.ErrorCode)
	}
	// The bucket holds offsets below 1000 only.
	var half []byte
	batch.Split(all, func(h *batch.Header, b []byte) error {
		if h.NextOffset() <= 1000 {
			half = append(half, b...)
		}
		return nil
	})
	remote.batches = half
	if p := listOffsetAt(t, h, 11, -6); p.ErrorCode != 0 || p.Offset != 1000 || p.LeaderEpoch != 0 || p.Timestamp != -1 {
		t.Fatalf("tiered below 1000: %+v, want offset 1000 in epoch 0", p)
	}
	// Remote data whose end is not known (a log start, no last offset):
	// -1, as Kafka answers while its leader does not know the uploaded
	// segments.
	remote.batches = nil
	if p := listOffsetAt(t, h, 11, -6); p.ErrorCode != 0 || p.Offset != -1 {
		t.Fatalf("remote end unknown: offset %d error %d, want -1", p.Offset, p.ErrorCode)
	}
	// Nothing tiered: every offset from the log start waits.
	remote.start = -1
	if p := listOffsetAt(t, h, 11, -6); p.ErrorCode != 0 || p.Offset != rep.Log().LogStartOffset() {
		t.Fatalf("nothing tiered: offset %d error %d, want the log start %d", p.Offset, p.ErrorCode, rep.Log().LogStartOffset())
	}
	// No tiering: -1.
	local := &listOffsetsHandler{leaders: leaders{"cold-0": rep}, log: quiet()}
	if p := listOffsetAt(t, local, 11, -6); p.ErrorCode != 0 || p.Offset != -1 || p.LeaderEpoch != -1 {
		t.Fatalf("without tiering: %+v, want -1", p)
	}
	for _, c := range []struct {
		v  int16
		ts int64
	}{{10, -6}, {8, -5}, {7, -4}, {6, -3}, {11, -7}} {
		if p := listOffsetAt(t, h, c.v, c.ts); p.ErrorCode != kerr.UnsupportedVersion.Code || p.Offset != -1 {
			t.Errorf("timestamp %d at v%d: offset %d error %d, want UNSUPPORTED_VERSION", c.ts, c.v, p.Offset, p.ErrorCode)
		}
	}
}
