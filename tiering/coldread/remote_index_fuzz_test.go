package coldread

import (
	"encoding/binary"
	"testing"
)

// FuzzParseOffsetIndex: a remote segment's .index, read from the bucket.
// Any input either fails with ErrCorruptIndex or parses to entries in
// strictly increasing order inside the log, whose lookups stay inside it.
func FuzzParseOffsetIndex(f *testing.F) {
	var ok []byte
	for i, pos := range []uint32{0, 700, 4000} {
		ok = binary.BigEndian.AppendUint32(ok, uint32(10*i))
		ok = binary.BigEndian.AppendUint32(ok, pos)
	}
	f.Add(ok, int64(1000), int64(8192))
	f.Add(ok[:11], int64(0), int64(100))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, int64(5), int64(10))
	f.Fuzz(func(t *testing.T, b []byte, base, logSize int64) {
		x, err := parseOffsetIndex(b, base, logSize)
		if err != nil {
			return
		}
		for i := range x.offsets {
			if x.positions[i] < 0 || x.positions[i] >= logSize {
				t.Fatalf("entry %d at position %d of a %d-byte log", i, x.positions[i], logSize)
			}
			if i > 0 && (x.offsets[i] <= x.offsets[i-1] || x.positions[i] <= x.positions[i-1]) {
				t.Fatalf("entry %d out of order", i)
			}
		}
		for _, target := range []int64{base - 1, base, base + 15, base + 1<<40} {
			if p := x.lookup(target); p < 0 || (p > 0 && p >= logSize) {
				t.Fatalf("lookup(%d) = %d", target, p)
			}
		}
		_ = x.floorPosition(logSize / 2)
	})
}

// FuzzParseTimeIndex: a remote segment's .timeindex, read from the bucket.
func FuzzParseTimeIndex(f *testing.F) {
	var ok []byte
	for i := range 3 {
		ok = binary.BigEndian.AppendUint64(ok, uint64(1_700_000_000_000+i*10))
		ok = binary.BigEndian.AppendUint32(ok, uint32(5*i))
	}
	f.Add(ok, int64(100), int64(120))
	f.Add(ok[:13], int64(0), int64(0))
	f.Fuzz(func(t *testing.T, b []byte, base, end int64) {
		x, err := parseTimeIndex(b, base, end)
		if err != nil {
			return
		}
		for i := range x.offsets {
			if x.offsets[i] > end || (i > 0 && (x.offsets[i] <= x.offsets[i-1] || x.timestamps[i] <= x.timestamps[i-1])) {
				t.Fatalf("entry %d: offset %d timestamp %d (end %d)", i, x.offsets[i], x.timestamps[i], end)
			}
		}
		_ = x.lookup(1_700_000_000_005, base)
	})
}
