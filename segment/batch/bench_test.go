package batch

import (
	"fmt"
	"hash/crc32"
	"testing"
)

// benchRecords returns 16 records of 1 KiB JSON-like values (16 KiB).
func benchRecords() []Record {
	recs := make([]Record, 16)
	for i := range recs {
		v := make([]byte, 0, 1024)
		for j := 0; len(v) < 1000; j++ {
			v = fmt.Appendf(v, `{"user":"u%05d","event":"page_view","ts":%d,"ok":true},`, i*100+j, 1700000000000+j)
		}
		recs[i] = Record{OffsetDelta: int32(i), Key: fmt.Appendf(nil, "user-%d", i), Value: v[:1024]}
	}
	return recs
}

func benchBatch(b *testing.B, c Codec) []byte {
	opts := NoProducer()
	opts.Codec = c
	batch, err := Build(nil, opts, benchRecords())
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

// BenchmarkParseVerify is the produce hot path on a 16 KiB uncompressed
// batch; BenchmarkCRC32C is its peer, the bare checksum over the same bytes.
func BenchmarkParseVerify(b *testing.B) {
	batch := benchBatch(b, CodecNone)
	b.SetBytes(int64(len(batch)))
	for b.Loop() {
		if _, err := ParseHeader(batch); err != nil {
			b.Fatal(err)
		}
		if err := VerifyCRC(batch); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCRC32C(b *testing.B) {
	batch := benchBatch(b, CodecNone)
	tab := crc32.MakeTable(crc32.Castagnoli)
	b.SetBytes(int64(len(batch)))
	for b.Loop() {
		_ = crc32.Checksum(batch[offAttributes:], tab)
	}
}

func BenchmarkCompress(b *testing.B) {
	raw := appendRecords(nil, benchRecords(), false)
	for _, c := range allCodecs[1:] {
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			var dst []byte
			for b.Loop() {
				var err error
				if dst, err = Compress(c, dst[:0], raw); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(raw))/float64(len(dst)), "ratio")
		})
	}
}

func BenchmarkDecompress(b *testing.B) {
	raw := appendRecords(nil, benchRecords(), false)
	for _, c := range allCodecs[1:] {
		comp, err := Compress(c, nil, raw)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			var dst []byte
			for b.Loop() {
				if dst, err = Decompress(c, dst[:0], comp, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkRecords(b *testing.B) {
	for _, c := range []Codec{CodecNone, CodecZstd} {
		batch := benchBatch(b, c)
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(16 << 10)
			for b.Loop() {
				if err := ForEachRecord(batch, 1<<20, func(*Record) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
