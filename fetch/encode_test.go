package fetch

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
)

// TestEncodeFetchDecodesWithKmsg encodes a response with file-backed record
// bytes at every served version and decodes it with franz-go's kmsg.
func TestEncodeFetchDecodesWithKmsg(t *testing.T) {
	rec, err := batch.Build(nil, batch.NoProducer(), []batch.Record{{Key: []byte("k"), Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "f")
	data := append(append([]byte("junk-before"), rec...), rec...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	idA, idB := [16]byte{1, 2, 3}, [16]byte{4, 5, 6}
	rack := "r1"
	endpoints := []partition.NodeEndpoint{{NodeID: 2, Host: "127.0.0.1", Port: 9093, Rack: &rack}, {NodeID: 3, Host: "h3", Port: 9094}}
	res := []topicResult{
		{topic: "a", id: idA, parts: []partResult{
			{partition: 0, hw: 10, logStart: 2, size: 2 * len(rec), reads: []segment.ReadResult{
				{File: f, Position: int64(len("junk-before")), Size: len(rec)},
				{File: f, Position: int64(len("junk-before") + len(rec)), Size: len(rec)},
			}},
			{partition: 1, errCode: 1, hw: -1, logStart: -1},
			{partition: 2, errCode: kerr.NotLeaderForPartition.Code, hw: -1, logStart: -1, leader: &leaderHint{id: 2, epoch: 7}},
			{partition: 4, hw: 5, logStart: 0, diverging: &divergingEpoch{epoch: 3, endOffset: 4}, leader: &leaderHint{id: 3, epoch: 8}},
		}},
		{topic: "b", id: idB, parts: []partResult{{partition: 3, hw: 0, logStart: 0}}},
	}
	for v := int16(4); v <= 18; v++ {
		body := encodeFetch(v, res, 0, 0, endpoints)
		var buf bytes.Buffer
		for _, p := range body.pieces {
			if p.file != nil {
				b := make([]byte, p.size)
				if _, err := p.file.ReadAt(b, p.pos); err != nil {
					t.Fatal(err)
				}
				buf.Write(b)
				continue
			}
			buf.Write(body.buf[p.from:p.to])
		}
		if buf.Len() != body.Len() {
			t.Fatalf("v%d: Len %d, wrote %d", v, body.Len(), buf.Len())
		}
		resp := kmsg.NewFetchResponse()
		resp.Version = v
		if err := resp.ReadFrom(buf.Bytes()); err != nil {
			t.Fatalf("v%d: kmsg cannot decode: %v", v, err)
		}
		if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 4 {
			t.Fatalf("v%d: topics %+v", v, resp.Topics)
		}
		if v >= 13 && (resp.Topics[0].TopicID != idA || resp.Topics[1].TopicID != idB || resp.Topics[0].Topic != "") ||
			v < 13 && (resp.Topics[0].Topic != "a" || resp.Topics[1].Topic != "b") {
			t.Fatalf("v%d: topics %q %x, %q %x", v, resp.Topics[0].Topic, resp.Topics[0].TopicID, resp.Topics[1].Topic, resp.Topics[1].TopicID)
		}
		p2, p4 := resp.Topics[0].Partitions[2], resp.Topics[0].Partitions[3]
		if v >= 12 && (p2.CurrentLeader.LeaderID != 2 || p2.CurrentLeader.LeaderEpoch != 7 || p4.CurrentLeader.LeaderID != 3 ||
			p4.CurrentLeader.LeaderEpoch != 8 || p4.DivergingEpoch.Epoch != 3 || p4.DivergingEpoch.EndOffset != 4 || p2.DivergingEpoch.Epoch != -1) {
			t.Fatalf("v%d: tags of partitions 2 and 4: %+v %+v", v, p2, p4)
		}
		wantBrokers := 0
		if v >= 16 {
			wantBrokers = 2
		}
		if len(resp.Brokers) != wantBrokers {
			t.Fatalf("v%d: %d node endpoints, want %d", v, len(resp.Brokers), wantBrokers)
		}
		if v >= 16 {
			b0, b1 := resp.Brokers[0], resp.Brokers[1]
			if b0.NodeID != 2 || b0.Host != "127.0.0.1" || b0.Port != 9093 || b0.Rack == nil || *b0.Rack != "r1" ||
				b1.NodeID != 3 || b1.Host != "h3" || b1.Port != 9094 || b1.Rack != nil {
				t.Fatalf("v%d: node endpoints %+v", v, resp.Brokers)
			}
		}
		p0 := resp.Topics[0].Partitions[0]
		if p0.HighWatermark != 10 || !bytes.Equal(p0.RecordBatches, append(append([]byte(nil), rec...), rec...)) {
			t.Fatalf("v%d: partition 0: hw %d, %d record bytes", v, p0.HighWatermark, len(p0.RecordBatches))
		}
		if v >= 5 && p0.LogStartOffset != 2 {
			t.Fatalf("v%d: log start %d", v, p0.LogStartOffset)
		}
		if resp.Topics[0].Partitions[1].ErrorCode != 1 || resp.Topics[1].Partitions[0].Partition != 3 {
			t.Fatalf("v%d: error partition or second topic wrong: %+v", v, resp.Topics)
		}
	}
}
