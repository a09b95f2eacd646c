package batch

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestBuildRecordsRoundTrip(t *testing.T) {
	recs := sampleRecords(37)
	for _, c := range allCodecs {
		opts := BuildOptions{BaseOffset: 1000, LeaderEpoch: 3, Codec: c, FirstTimestamp: 1_700_000_000_000,
			ProducerID: 42, ProducerEpoch: 2, BaseSequence: 100, Transactional: true}
		b := mustBuild(t, opts, recs)
		h, err := Validate(b, 1<<20)
		if err != nil {
			t.Fatalf("%s: Validate: %v", c, err)
		}
		if h.BaseOffset != 1000 || h.PartitionLeaderEpoch != 3 || h.Codec() != c || !h.Transactional() || h.Control() ||
			h.LogAppendTime() || h.NumRecords != 37 || h.LastOffsetDelta != 36 || h.ProducerID != 42 ||
			h.ProducerEpoch != 2 || h.BaseSequence != 100 || h.FirstTimestamp != opts.FirstTimestamp ||
			h.MaxTimestamp != opts.FirstTimestamp+36*7 {
			t.Fatalf("%s: header %+v", c, h)
		}
		got, err := Records(b, 1<<20)
		if err != nil {
			t.Fatalf("%s: Records: %v", c, err)
		}
		equalRecords(t, got, recs)

		var n int
		err = ForEachRecord(b, 1<<20, func(r *Record) error {
			if r.OffsetDelta != int32(n) {
				t.Fatalf("%s: record %d has delta %d", c, n, r.OffsetDelta)
			}
			n++
			return nil
		})
		if err != nil || n != len(recs) {
			t.Fatalf("%s: ForEachRecord: %d records, %v", c, n, err)
		}
		stop := errors.New("stop")
		if err := ForEachRecord(b, 1<<20, func(*Record) error { return stop }); err != stop {
			t.Fatalf("%s: ForEachRecord did not return fn's error: %v", c, err)
		}
	}
}

func TestBuildOptions(t *testing.T) {
	recs := []Record{{OffsetDelta: 2, TimestampDelta: 5}, {OffsetDelta: 9, TimestampDelta: -3, Value: []byte("v")}}
	opts := NoProducer()
	opts.KeepOffsetDeltas = true
	opts.LogAppendTime = true
	opts.Control = true
	opts.MaxTimestamp = 77
	b := mustBuild(t, opts, recs)
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.LastOffsetDelta != 9 || h.NumRecords != 2 || h.MaxTimestamp != 77 || !h.LogAppendTime() || !h.Control() ||
		h.ProducerID != -1 || h.ProducerEpoch != -1 || h.BaseSequence != -1 || h.PartitionLeaderEpoch != -1 {
		t.Fatalf("header %+v", h)
	}
	if err := VerifyCRC(b); err != nil {
		t.Fatal(err)
	}
	// A compacted-style batch is fine for Records but not for Validate.
	got, err := Records(b, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	equalRecords(t, got, recs)
	if _, err := Validate(b, 1<<20); !errors.Is(err, ErrRecordCount) {
		t.Fatalf("Validate of a batch with gaps: %v", err)
	}

	if _, err := Build(nil, opts, nil); !errors.Is(err, ErrRecordCount) {
		t.Fatalf("Build with no records: %v", err)
	}
	opts.KeepOffsetDeltas = true
	if _, err := Build(nil, opts, []Record{{OffsetDelta: 3}, {OffsetDelta: 3}}); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("Build with repeated deltas: %v", err)
	}
	opts.Codec = 6
	if _, err := Build(nil, opts, recs); !errors.Is(err, ErrCodec) {
		t.Fatalf("Build with codec 6: %v", err)
	}
}

func TestRecompress(t *testing.T) {
	recs := sampleRecords(20)
	opts := BuildOptions{BaseOffset: 55, LeaderEpoch: 9, Codec: CodecGzip, FirstTimestamp: 123, ProducerID: 7,
		ProducerEpoch: 1, BaseSequence: 4, Transactional: true, LogAppendTime: true}
	src := mustBuild(t, opts, recs)
	for _, to := range allCodecs {
		out, err := Recompress([]byte("x"), src, to, 1<<20)
		if err != nil {
			t.Fatalf("to %s: %v", to, err)
		}
		out = out[1:]
		h, err := Validate(out, 1<<20)
		if err != nil {
			t.Fatalf("to %s: Validate: %v", to, err)
		}
		h0, _ := ParseHeader(src)
		h0.Attributes = h0.Attributes&^attrCodecMask | int16(to)
		h0.Length, h0.CRC = h.Length, h.CRC
		if h != h0 {
			t.Fatalf("to %s: header\n%+v\nwant\n%+v", to, h, h0)
		}
		got, err := Records(out, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		equalRecords(t, got, recs)
	}
	bad := cloneBatch(src)
	bad[len(bad)-1] ^= 1
	if _, err := Recompress(nil, bad, CodecNone, 1<<20); !errors.Is(err, ErrCRC) {
		t.Fatalf("Recompress of a bad CRC: %v", err)
	}
	if _, err := Recompress(nil, src, CodecNone, 10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Recompress over the limit: %v", err)
	}
}

// rawBatch builds an uncompressed batch around a hand-made records payload.
func rawBatch(numRecords, lastDelta int32, payload []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(payload))
	b = append(b, payload...)
	be := binary.BigEndian
	be.PutUint32(b[offLength:], uint32(len(b)-LogOverhead))
	b[offMagic] = Magic
	be.PutUint32(b[offLastOffsetDelta:], uint32(lastDelta))
	be.PutUint32(b[offNumRecords:], uint32(numRecords))
	be.PutUint32(b[offCRC:], ComputeCRC(b))
	return b
}

func TestRecordsErrors(t *testing.T) {
	one := appendRecords(nil, []Record{{Value: []byte("v")}}, false)
	two := appendRecords(nil, []Record{{Value: []byte("a")}, {Value: []byte("b")}}, false)
	hugeVarint := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"count too high", rawBatch(2, 1, one), ErrRecordCount},
		{"count too low", rawBatch(1, 1, two), ErrRecordCount},
		{"delta beyond last", rawBatch(2, 0, two), ErrRecordCount},
		{"truncated record", rawBatch(1, 0, one[:len(one)-1]), ErrInvalidRecord},
		{"trailing byte in record", rawBatch(1, 0, append([]byte{byte(len(one)) * 2}, append(one[1:], 0)...)), ErrInvalidRecord},
		{"huge length varint", rawBatch(1, 0, hugeVarint), ErrInvalidRecord},
		{"negative length", rawBatch(1, 0, []byte{0x01, 0, 0, 0, 0, 0, 0}), ErrInvalidRecord},
		{"key length beyond record", rawBatch(1, 0, []byte{14, 0, 0, 0, 0x7e, 0, 0, 0}), ErrInvalidRecord},
		{"huge header count", rawBatch(1, 0, []byte{12, 0, 0, 0, 1, 1, 0xfe, 0xff, 0xff, 0xff, 0x0f}[:7]), ErrInvalidRecord},
		{"null header key", rawBatch(1, 0, []byte{16, 0, 0, 0, 1, 1, 2, 1, 1}), ErrInvalidRecord},
		{"length mismatch", cloneBatch(rawBatch(1, 0, one))[:HeaderSize+1], ErrCorrupt},
		{"short", []byte{1, 2, 3}, ErrCorrupt},
	}
	for _, tc := range cases {
		if _, err := Records(tc.b, 1<<20); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
}
