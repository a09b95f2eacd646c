package batch

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestValidateErrors(t *testing.T) {
	good := mustBuild(t, NoProducer(), sampleRecords(5))
	resign := func(b []byte) []byte { binary.BigEndian.PutUint32(b[offCRC:], ComputeCRC(b)); return b }
	mut := func(f func(b []byte) []byte) []byte { return f(cloneBatch(good)) }
	cases := []struct {
		name string
		b    []byte
		max  int
		want error
	}{
		{"truncated", good[:len(good)-1], 1 << 20, ErrCorrupt},
		{"extra byte", append(cloneBatch(good), 0), 1 << 20, ErrCorrupt},
		{"header only", good[:HeaderSize-1], 1 << 20, ErrCorrupt},
		{"too large", good, len(good) - 1, ErrTooLarge},
		{"bad crc", mut(func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b }), 1 << 20, ErrCRC},
		{"bad magic", mut(func(b []byte) []byte { b[offMagic] = 1; return b }), 1 << 20, ErrMagic},
		{"length below header", mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b[offLength:], 10); return b }), 1 << 20, ErrCorrupt},
		{"count mismatch", mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b[offNumRecords:], 4); return resign(b) }), 1 << 20, ErrRecordCount},
		{"zero records", mut(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[offNumRecords:], 0)
			binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 0xffffffff)
			return resign(b)
		}), 1 << 20, ErrRecordCount},
		{"unknown codec", mut(func(b []byte) []byte { b[offAttributes+1] |= 5; return resign(b) }), 1 << 20, ErrCodec},
	}
	for _, tc := range cases {
		if _, err := Validate(tc.b, tc.max); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := Validate(good, len(good)); err != nil {
		t.Fatalf("good batch at exactly the limit: %v", err)
	}
}

func TestSplit(t *testing.T) {
	var log []byte
	for i := range 3 {
		opts := NoProducer()
		opts.BaseOffset = int64(i * 10)
		opts.Codec = allCodecs[i]
		var err error
		if log, err = Build(log, opts, sampleRecords(10)); err != nil {
			t.Fatal(err)
		}
	}
	var bases []int64
	if err := Split(log, func(h *Header, b []byte) error {
		bases = append(bases, h.BaseOffset)
		_, err := Validate(b, 1<<20)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(bases) != 3 || bases[2] != 20 {
		t.Fatalf("bases %v", bases)
	}
	if err := Split(log[:len(log)-5], func(*Header, []byte) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("torn tail: %v", err)
	}
}
