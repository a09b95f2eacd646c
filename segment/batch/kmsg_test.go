package batch

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShaleBatchReadByKmsg decodes Shale-built batches with franz-go's
// kmsg.RecordBatch and compares every field, the CRC and every record.
func TestShaleBatchReadByKmsg(t *testing.T) {
	recs := sampleRecords(25)
	dec := kgo.DefaultDecompressor()
	for _, c := range allCodecs {
		opts := BuildOptions{BaseOffset: 77, LeaderEpoch: 5, Codec: c, FirstTimestamp: 1_650_000_000_000,
			ProducerID: 9001, ProducerEpoch: 3, BaseSequence: 12, Transactional: true, LogAppendTime: true}
		b := mustBuild(t, opts, recs)
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(b); err != nil {
			t.Fatalf("%s: kmsg: %v", c, err)
		}
		h, _ := ParseHeader(b)
		if kb.FirstOffset != 77 || kb.Length != h.Length || kb.PartitionLeaderEpoch != 5 || kb.Magic != 2 ||
			uint32(kb.CRC) != ComputeCRC(b) || kb.Attributes != int16(c)|attrLogAppendTime|attrTransactional ||
			kb.LastOffsetDelta != 24 || kb.FirstTimestamp != opts.FirstTimestamp || kb.MaxTimestamp != h.MaxTimestamp ||
			kb.ProducerID != 9001 || kb.ProducerEpoch != 3 || kb.FirstSequence != 12 || kb.NumRecords != 25 {
			t.Fatalf("%s: kmsg sees %+v", c, kb)
		}
		raw, err := dec.Decompress(kb.Records, kgo.CompressionCodecType(c))
		if err != nil {
			t.Fatalf("%s: franz-go decompress: %v", c, err)
		}
		got := make([]Record, 0, len(recs))
		for len(raw) > 0 {
			var kr kmsg.Record
			if err := kr.ReadFrom(raw); err != nil {
				t.Fatalf("%s: kmsg record: %v", c, err)
			}
			raw = raw[len(kr.AppendTo(nil)):]
			r := Record{OffsetDelta: kr.OffsetDelta, TimestampDelta: kr.TimestampDelta64, Key: kr.Key, Value: kr.Value, Attributes: kr.Attributes}
			for _, kh := range kr.Headers {
				r.Headers = append(r.Headers, RecordHeader{Key: kh.Key, Value: kh.Value})
			}
			got = append(got, r)
		}
		equalRecords(t, got, recs)
	}
}

// kmsgBatch assembles a batch the way franz-go's producer does: kmsg records,
// compressed by kgo's default compressor, in a kmsg.RecordBatch.
func kmsgBatch(t testing.TB, c Codec, base int64, recs []Record) []byte {
	t.Helper()
	var raw []byte
	var maxDelta int64
	for i, r := range recs {
		kr := kmsg.Record{Attributes: r.Attributes, TimestampDelta64: r.TimestampDelta, OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		// Length is everything after the length varint; with Length 0 that
		// varint is one byte.
		kr.Length = int32(len(kr.AppendTo(nil)) - 1)
		raw = kr.AppendTo(raw)
		maxDelta = max(maxDelta, r.TimestampDelta)
	}
	if c != CodecNone {
		kc := map[Codec]kgo.CompressionCodec{CodecGzip: kgo.GzipCompression(), CodecSnappy: kgo.SnappyCompression(),
			CodecLZ4: kgo.Lz4Compression(), CodecZstd: kgo.ZstdCompression()}[c]
		comp, err := kgo.DefaultCompressor(kc)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := comp.Compress(new(bytes.Buffer), raw)
		raw = bytes.Clone(out)
	}
	kb := kmsg.RecordBatch{FirstOffset: base, PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(c),
		LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: 1_600_000_000_000, MaxTimestamp: 1_600_000_000_000 + maxDelta,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(recs)), Records: raw}
	kb.Length = int32(HeaderSize - LogOverhead + len(raw))
	b := kb.AppendTo(nil)
	kb.CRC = int32(ComputeCRC(b))
	return kb.AppendTo(nil)
}

// TestKmsgBatchReadByShale parses franz-go-built batches (raw snappy, as
// franz-go's default compressor writes) with Shale.
func TestKmsgBatchReadByShale(t *testing.T) {
	recs := sampleRecords(25)
	for _, c := range allCodecs {
		b := kmsgBatch(t, c, 500, recs)
		h, err := Validate(b, 1<<20)
		if err != nil {
			t.Fatalf("%s: Validate: %v", c, err)
		}
		if h.BaseOffset != 500 || h.Codec() != c || h.NumRecords != 25 || h.ProducerID != -1 {
			t.Fatalf("%s: header %+v", c, h)
		}
		got, err := Records(b, 1<<20)
		if err != nil {
			t.Fatalf("%s: Records: %v", c, err)
		}
		equalRecords(t, got, recs)
	}
}
