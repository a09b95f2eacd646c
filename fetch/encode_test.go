package fetch

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

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
	res := []topicResult{
		{topic: "a", parts: []partResult{
			{partition: 0, hw: 10, logStart: 2, size: 2 * len(rec), reads: []segment.ReadResult{
				{File: f, Position: int64(len("junk-before")), Size: len(rec)},
				{File: f, Position: int64(len("junk-before") + len(rec)), Size: len(rec)},
			}},
			{partition: 1, errCode: 1, hw: -1, logStart: -1},
		}},
		{topic: "b", parts: []partResult{{partition: 3, hw: 0, logStart: 0}}},
	}
	for v := int16(4); v <= 12; v++ {
		body := encodeFetch(v, res, 0, 0)
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
		if len(resp.Topics) != 2 || resp.Topics[0].Topic != "a" || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d: topics %+v", v, resp.Topics)
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
