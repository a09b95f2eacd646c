package fetch

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment/batch"
)

// decodeBody renders a response body as the connection would write it and
// decodes it with kmsg at version v.
func decodeBody(t *testing.T, b *body, v int16) *kmsg.FetchResponse {
	t.Helper()
	var buf bytes.Buffer
	for _, p := range b.pieces {
		switch {
		case p.file != nil:
			chunk := make([]byte, p.size)
			if _, err := p.file.ReadAt(chunk, p.pos); err != nil {
				t.Fatal(err)
			}
			buf.Write(chunk)
		case p.mem != nil:
			buf.Write(p.mem)
		default:
			buf.Write(b.buf[p.from:p.to])
		}
	}
	if buf.Len() != b.Len() {
		t.Fatalf("body Len %d, wrote %d", b.Len(), buf.Len())
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = v
	if err := resp.ReadFrom(buf.Bytes()); err != nil {
		t.Fatalf("v%d: kmsg cannot decode: %v", v, err)
	}
	return resp
}

// TestEncodeDivergingEpoch: the v12 partition tag 0 decodes with kmsg as
// DivergingEpoch beside a partition without one (kmsg's default, -1/-1),
// and older versions, which have no tagged fields, still decode.
func TestEncodeDivergingEpoch(t *testing.T) {
	res := []topicResult{{topic: "t", parts: []partResult{
		{partition: 0, hw: 40, logStart: 3, diverging: &divergingEpoch{epoch: 7, endOffset: 35}},
		{partition: 1, hw: 9, logStart: 0},
		{partition: 2, hw: 12, logStart: 1, diverging: &divergingEpoch{epoch: 0, endOffset: 0}},
	}}}
	for v := int16(4); v <= 12; v++ {
		resp := decodeBody(t, encodeFetch(v, res, 0, 0, nil), v)
		ps := resp.Topics[0].Partitions
		if len(ps) != 3 {
			t.Fatalf("v%d: %d partitions", v, len(ps))
		}
		want := [3]kmsg.FetchResponseTopicPartitionDivergingEpoch{{Epoch: -1, EndOffset: -1}, {Epoch: -1, EndOffset: -1}, {Epoch: -1, EndOffset: -1}}
		if v >= 12 {
			want[0] = kmsg.FetchResponseTopicPartitionDivergingEpoch{Epoch: 7, EndOffset: 35}
			want[2] = kmsg.FetchResponseTopicPartitionDivergingEpoch{Epoch: 0, EndOffset: 0}
		}
		for i, p := range ps {
			if p.DivergingEpoch.Epoch != want[i].Epoch || p.DivergingEpoch.EndOffset != want[i].EndOffset || p.UnknownTags.Len() != 0 {
				t.Fatalf("v%d partition %d: diverging epoch %+v, want %+v", v, i, p.DivergingEpoch, want[i])
			}
			if p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
				t.Fatalf("v%d partition %d: error %d, %d record bytes", v, i, p.ErrorCode, len(p.RecordBatches))
			}
		}
		if ps[0].HighWatermark != 40 || (v >= 5 && ps[0].LogStartOffset != 3) {
			t.Fatalf("v%d: hw %d log start %d beside the diverging epoch", v, ps[0].HighWatermark, ps[0].LogStartOffset)
		}
	}
}

// TestFollowerFetchAnswersDivergingEpoch: a follower fetch (replica id 2)
// whose last epoch ends earlier on the leader gets its partition answered
// with no records, error NONE, the high watermark, the log start and
// DivergingEpoch, at once (readAll's failed); a follower fetch that agrees
// gets records.
func TestFollowerFetchAnswersDivergingEpoch(t *testing.T) {
	newLeader := func() *partition.Replica {
		rep, err := partition.Open(partition.Options{Dir: t.TempDir(), Topic: "hot", Partition: 0,
			Config: config.ResolveTopic(nil, nil), Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rep.Close() })
		rep.SetAssignment(1, []int32{1, 2}, []int32{1})
		for _, e := range []int32{0, 2} { // history [0@0, 2@5], log end 10
			rep.SetLeadership(true, e)
			recs := make([]batch.Record, 5)
			for i := range recs {
				recs[i] = batch.Record{Value: []byte("v")}
			}
			b, err := batch.Build(nil, batch.NoProducer(), recs)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rep.AppendLeader(b); err != nil {
				t.Fatal(err)
			}
		}
		return rep
	}
	hot, other := newLeader(), newLeader()
	h := &fetchHandler{leaders: leaders{"hot-0": hot, "other-0": other}, log: quiet()}
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 12, 2, 10, 1, 1<<20
	for _, p := range []struct {
		topic     string
		offset    int64
		lastEpoch int32
	}{{"hot", 8, 0}, {"other", 5, 0}} {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = p.topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.LastFetchedEpoch, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = p.offset, p.lastEpoch, 2, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	res, _, _, failed, _ := h.readAll(req, h.sessionContext(req.Version, req).parts, 1<<20, true, nil)
	if !failed {
		t.Fatal("a DivergingEpoch does not answer at once")
	}
	div := res[0].parts[0]
	if div.diverging == nil || *div.diverging != (divergingEpoch{epoch: 0, endOffset: 5}) {
		t.Fatalf("diverged partition: %+v, want DivergingEpoch {0, 5}", div.diverging)
	}
	if div.errCode != 0 || len(div.reads) != 0 || div.size != 0 || div.hw != hot.HighWatermark() || div.logStart != 0 {
		t.Fatalf("diverged partition: error %d, %d reads, hw %d (replica %d), log start %d", div.errCode, len(div.reads), div.hw, hot.HighWatermark(), div.logStart)
	}
	if ok := res[1].parts[0]; ok.diverging != nil || ok.errCode != 0 || ok.size == 0 {
		t.Fatalf("agreeing partition: %+v, error %d, %d bytes", ok.diverging, ok.errCode, ok.size)
	}
	resp := decodeBody(t, encodeFetch(12, res, 0, 0, nil), 12)
	p := resp.Topics[0].Partitions[0]
	if p.DivergingEpoch.Epoch != 0 || p.DivergingEpoch.EndOffset != 5 || p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != hot.HighWatermark() {
		t.Fatalf("on the wire: %+v", p)
	}
	if q := resp.Topics[1].Partitions[0]; q.DivergingEpoch.Epoch != -1 || len(q.RecordBatches) == 0 {
		t.Fatalf("agreeing partition on the wire: diverging %+v, %d record bytes", q.DivergingEpoch, len(q.RecordBatches))
	}
}
