package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchResponseFrame is resp (v12) as a leader sends it, without the size
// prefix: correlation id, empty header tags, body.
func fetchResponseFrame(corr int32, resp *kmsg.FetchResponse) []byte {
	resp.Version = fetchVersion
	b := binary.BigEndian.AppendUint32(nil, uint32(corr))
	b = append(b, 0) // no header tags
	return resp.AppendTo(b)
}

func TestParseFetchResponse(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "t"
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.Partition, rp.HighWatermark, rp.RecordBatches = 3, 42, []byte("batches")
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	frame := fetchResponseFrame(7, resp)

	got, err := parseFetchResponse(frame, 7)
	if err != nil {
		t.Fatal(err)
	}
	p := got.Topics[0].Partitions[0]
	if got.Topics[0].Topic != "t" || p.Partition != 3 || p.HighWatermark != 42 || !bytes.Equal(p.RecordBatches, []byte("batches")) {
		t.Fatalf("decoded %+v", got)
	}
	// A header tag is skipped.
	tagged := append(binary.BigEndian.AppendUint32(nil, 7), 1, 5, 2, 0xaa, 0xbb)
	tagged = append(tagged, frame[5:]...)
	if _, err := parseFetchResponse(tagged, 7); err != nil {
		t.Fatalf("with a header tag: %v", err)
	}
	for name, b := range map[string][]byte{
		"another correlation id": fetchResponseFrame(8, resp),
		"truncated":              frame[:len(frame)-3],
		"tag past the end":       append(binary.BigEndian.AppendUint32(nil, 7), 1, 5, 200),
		"no header tags":         binary.BigEndian.AppendUint32(nil, 7),
	} {
		if _, err := parseFetchResponse(b, 7); !errors.Is(err, errFetchResponse) {
			t.Errorf("%s: %v, want errFetchResponse", name, err)
		}
	}
}

// TestParseFetchResponseDivergingEpoch: the follower's decoder reads a
// partition's DivergingEpoch (v12 tagged field 0, KIP-320) as kmsg wrote
// it, and a partition without one as absent (Epoch -1).
func TestParseFetchResponseDivergingEpoch(t *testing.T) {
	frame := fetchResponseFrame(9, divergingResponse(4, 120))
	got, err := parseFetchResponse(frame, 9)
	if err != nil {
		t.Fatal(err)
	}
	ps := got.Topics[0].Partitions
	if len(ps) != 2 {
		t.Fatalf("%d partitions", len(ps))
	}
	if d := ps[0].DivergingEpoch; d.Epoch != 4 || d.EndOffset != 120 || ps[0].HighWatermark != 100 || len(ps[0].RecordBatches) != 0 {
		t.Fatalf("diverged partition decoded as %+v", ps[0])
	}
	if d := ps[1].DivergingEpoch; d.Epoch != -1 || d.EndOffset != -1 || !bytes.Equal(ps[1].RecordBatches, []byte("batches")) {
		t.Fatalf("other partition decoded as %+v", ps[1])
	}
	// The tag is really on the wire: the same response without it is shorter.
	if plain := fetchResponseFrame(9, divergingResponse(-1, -1)); len(plain) >= len(frame) {
		t.Fatalf("frame with DivergingEpoch %d bytes, without %d", len(frame), len(plain))
	}
}

// divergingResponse is a v12 response of two partitions of topic "t": 0
// with DivergingEpoch {epoch, end} (absent for -1) and no records, 1 with
// records.
func divergingResponse(epoch int32, end int64) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "t"
	div := kmsg.NewFetchResponseTopicPartition()
	div.HighWatermark, div.LogStartOffset = 100, 0
	div.DivergingEpoch.Epoch, div.DivergingEpoch.EndOffset = epoch, end
	other := kmsg.NewFetchResponseTopicPartition()
	other.Partition, other.HighWatermark, other.RecordBatches = 1, 7, []byte("batches")
	rt.Partitions = append(rt.Partitions, div, other)
	resp.Topics = append(resp.Topics, rt)
	return resp
}

// FuzzParseFetchResponse: bytes from a leader (or anything on its port)
// never panic the follower's decoder.
func FuzzParseFetchResponse(f *testing.F) {
	resp := kmsg.NewPtrFetchResponse()
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "t"
	rt.Partitions = append(rt.Partitions, kmsg.NewFetchResponseTopicPartition())
	resp.Topics = append(resp.Topics, rt)
	f.Add(fetchResponseFrame(1, resp))
	f.Add(fetchResponseFrame(1, divergingResponse(3, 42)))
	f.Add([]byte{0, 0, 0, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 5 {
			return // Fetch checks the size prefix first
		}
		parseFetchResponse(b, 1)
	})
}
