package batch

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fuzzLimit bounds decompression in the fuzz targets: enough for every seed,
// small enough that a bomb shows up as ErrTooLarge, not as memory.
const fuzzLimit = 1 << 20

func goldenSeeds(f *testing.F) [][]byte {
	names, err := filepath.Glob(filepath.Join("testdata", "*.hex"))
	if err != nil || len(names) == 0 {
		f.Fatalf("no golden seeds: %v", err)
	}
	var seeds [][]byte
	for _, n := range names {
		seeds = append(seeds, readHex(f, n))
	}
	return seeds
}

var knownErrors = []error{ErrCorrupt, ErrCRC, ErrMagic, ErrTooLarge, ErrRecordCount, ErrInvalidRecord, ErrCodec}

func isKnown(err error) bool {
	for _, k := range knownErrors {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// FuzzParseBatch runs the decoders on arbitrary bytes: they must never
// panic, must fail only with the package's typed errors, and what Validate
// and Records accept must survive a Recompress round trip.
func FuzzParseBatch(f *testing.F) {
	for _, s := range goldenSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkBatchBytes(t, b)
		// Again with the length and CRC made right, so that the fuzzer
		// reaches past Validate into Records and Recompress.
		if len(b) >= HeaderSize && len(b)-LogOverhead <= 1<<30 {
			fixed := cloneBatch(b)
			fixLengthAndCRC(fixed)
			checkBatchBytes(t, fixed)
		}
	})
}

func checkBatchBytes(t *testing.T, b []byte) {
	{
		if _, err := ParseHeader(b); err != nil && !isKnown(err) {
			t.Fatalf("ParseHeader: untyped error %v", err)
		}
		_, verr := Validate(b, 1<<20)
		if verr != nil && !isKnown(verr) {
			t.Fatalf("Validate: untyped error %v", verr)
		}
		recs, rerr := Records(b, fuzzLimit)
		if rerr != nil && !isKnown(rerr) {
			t.Fatalf("Records: untyped error %v", rerr)
		}
		n := 0
		ferr := ForEachRecord(b, fuzzLimit, func(*Record) error { n++; return nil })
		if (ferr == nil) != (rerr == nil) || (rerr == nil && n != len(recs)) {
			t.Fatalf("ForEachRecord (%d, %v) disagrees with Records (%d, %v)", n, ferr, len(recs), rerr)
		}
		if verr != nil || rerr != nil {
			return
		}
		out, err := Recompress(nil, b, CodecNone, fuzzLimit)
		if err != nil {
			t.Fatalf("Recompress of a valid batch: %v", err)
		}
		again, err := Records(out, fuzzLimit)
		if err != nil {
			t.Fatalf("Records after Recompress: %v", err)
		}
		equalRecords(t, again, recs)
	}
}

// FuzzDecompress feeds arbitrary bytes to every codec under a small limit:
// no panic, only typed errors, and never more output than the limit.
func FuzzDecompress(f *testing.F) {
	for _, s := range goldenSeeds(f) {
		if len(s) > HeaderSize {
			h, _ := ParseHeader(s)
			f.Add(uint8(h.Codec()), s[HeaderSize:])
		}
	}
	f.Add(uint8(CodecSnappy), append(append([]byte{}, xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0x80, 0x80))
	const limit = 64 << 10
	f.Fuzz(func(t *testing.T, codec uint8, src []byte) {
		c := Codec(codec % 6)
		out, err := Decompress(c, nil, src, limit)
		if err != nil {
			if !isKnown(err) {
				t.Fatalf("%s: untyped error %v", c, err)
			}
			return
		}
		if len(out) > limit {
			t.Fatalf("%s: %d bytes out, limit %d", c, len(out), limit)
		}
	})
}

func TestFuzzSeedsExist(t *testing.T) {
	if _, err := os.Stat(filepath.Join("testdata", "batch-none.hex")); err != nil {
		t.Fatal(err)
	}
}
