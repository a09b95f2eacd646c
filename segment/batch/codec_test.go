package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kgo"
)

func testPayloads() map[string][]byte {
	rnd := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 100<<10)
	for i := range random {
		random[i] = byte(rnd.Uint32())
	}
	return map[string][]byte{
		"empty":  {},
		"one":    {'x'},
		"json":   bytes.Repeat([]byte(`{"user":"alice","action":"click","n":12345},`), 3000),
		"random": random,
	}
}

func TestCodecRoundTrip(t *testing.T) {
	for _, c := range allCodecs {
		for name, src := range testPayloads() {
			prefix := []byte("prefix")
			comp, err := Compress(c, prefix, src)
			if err != nil {
				t.Fatalf("%s/%s: Compress: %v", c, name, err)
			}
			if !bytes.HasPrefix(comp, prefix) {
				t.Fatalf("%s/%s: Compress dropped dst", c, name)
			}
			out, err := Decompress(c, []byte("pre"), comp[len(prefix):], len(src))
			if err != nil {
				t.Fatalf("%s/%s: Decompress: %v", c, name, err)
			}
			if !bytes.Equal(out, append([]byte("pre"), src...)) {
				t.Fatalf("%s/%s: round trip differs", c, name)
			}
			if len(src) > 0 {
				_, err := Decompress(c, nil, comp[len(prefix):], len(src)-1)
				if !errors.Is(err, ErrTooLarge) {
					t.Fatalf("%s/%s: limit one below the size: got %v, want ErrTooLarge", c, name, err)
				}
			}
		}
	}
}

// TestCodecCrossFranz checks that franz-go's own compressor and decompressor
// agree with ours in both directions (franz-go writes raw snappy).
func TestCodecCrossFranz(t *testing.T) {
	src := testPayloads()["json"]
	kcodec := map[Codec]kgo.CompressionCodec{
		CodecGzip: kgo.GzipCompression(), CodecSnappy: kgo.SnappyCompression(),
		CodecLZ4: kgo.Lz4Compression(), CodecZstd: kgo.ZstdCompression(),
	}
	dec := kgo.DefaultDecompressor()
	for c, kc := range kcodec {
		comp, err := kgo.DefaultCompressor(kc)
		if err != nil {
			t.Fatal(err)
		}
		theirs, used := comp.Compress(new(bytes.Buffer), src)
		if used != kgo.CompressionCodecType(c) {
			t.Fatalf("%s: franz-go used codec %d", c, used)
		}
		got, err := Decompress(c, nil, theirs, len(src))
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("%s: decompressing franz-go output: %v", c, err)
		}
		ours, err := Compress(c, nil, src)
		if err != nil {
			t.Fatal(err)
		}
		back, err := dec.Decompress(ours, kgo.CompressionCodecType(c))
		if err != nil || !bytes.Equal(back, src) {
			t.Fatalf("%s: franz-go decompressing ours: %v", c, err)
		}
	}
}

func TestSnappyXerialFraming(t *testing.T) {
	src := testPayloads()["json"] // > 32 KiB: several xerial blocks
	comp, err := Compress(CodecSnappy, nil, src)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(comp, xerialMagic) || binary.BigEndian.Uint32(comp[8:]) != 1 || binary.BigEndian.Uint32(comp[12:]) != 1 {
		t.Fatalf("not xerial framed: % x", comp[:16])
	}
	blocks := 0
	for rem := comp[16:]; len(rem) > 0; blocks++ {
		n := binary.BigEndian.Uint32(rem)
		rem = rem[4+n:]
	}
	if want := (len(src) + xerialBlockSize - 1) / xerialBlockSize; blocks != want {
		t.Fatalf("%d xerial blocks, want %d", blocks, want)
	}
	raw := s2.EncodeSnappy(nil, src)
	got, err := Decompress(CodecSnappy, nil, raw, len(src))
	if err != nil || !bytes.Equal(got, src) {
		t.Fatalf("raw snappy block: %v", err)
	}
}

func TestDecompressBombs(t *testing.T) {
	zeros := make([]byte, 8<<20)
	for _, c := range allCodecs[1:] {
		comp, err := Compress(c, nil, zeros)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Decompress(c, nil, comp, 1<<20)
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%s: 8 MiB of zeros under a 1 MiB limit: got %v, want ErrTooLarge", c, err)
		}
	}
	// A raw snappy block and a xerial block that claim 1 GiB.
	claim := binary.AppendUvarint(nil, 1<<30)
	if _, err := Decompress(CodecSnappy, nil, claim, 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("raw snappy claiming 1 GiB: %v", err)
	}
	x := append(append([]byte{}, xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)
	x = binary.BigEndian.AppendUint32(x, uint32(len(claim)))
	x = append(x, claim...)
	if _, err := Decompress(CodecSnappy, nil, x, 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("xerial claiming 1 GiB: %v", err)
	}
}

func TestDecompressGarbage(t *testing.T) {
	garbage := []byte("this is not compressed data at all, not even close")
	for _, c := range allCodecs[1:] {
		if _, err := Decompress(c, nil, garbage, 1<<20); !errors.Is(err, ErrCodec) {
			t.Fatalf("%s: garbage: got %v, want ErrCodec", c, err)
		}
	}
	if _, err := Decompress(Codec(5), nil, garbage, 1<<20); !errors.Is(err, ErrCodec) {
		t.Fatalf("codec 5: %v", err)
	}
	if _, err := Compress(Codec(7), nil, garbage); !errors.Is(err, ErrCodec) {
		t.Fatalf("Compress codec 7: %v", err)
	}
	// Truncated xerial framing.
	comp, _ := Compress(CodecSnappy, nil, garbage)
	if _, err := Decompress(CodecSnappy, nil, comp[:len(comp)-3], 1<<20); !errors.Is(err, ErrCodec) {
		t.Fatalf("truncated xerial: %v", err)
	}
}
