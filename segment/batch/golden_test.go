package batch

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenRecords are the records of every golden batch: three records with a
// null key, an empty key, a key, a null value and headers.
func goldenRecords() []Record {
	return []Record{
		{OffsetDelta: 0, TimestampDelta: 0, Key: nil, Value: []byte(`{"id":1}`)},
		{OffsetDelta: 1, TimestampDelta: 5, Key: []byte{}, Value: nil, Headers: []RecordHeader{{Key: "trace", Value: []byte("abc")}}},
		{OffsetDelta: 2, TimestampDelta: 3, Key: []byte("k"), Value: []byte(`{"id":3}`)},
	}
}

func goldenOptions(c Codec) BuildOptions {
	return BuildOptions{BaseOffset: 100, LeaderEpoch: 1, Codec: c, FirstTimestamp: 1_700_000_000_000,
		ProducerID: 5, ProducerEpoch: 0, BaseSequence: 10}
}

// writeHex writes b as hex, 32 bytes a line, after a comment line.
func writeHex(path, comment string, b []byte) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# %s\n", comment)
	for len(b) > 0 {
		n := min(32, len(b))
		sb.WriteString(hex.EncodeToString(b[:n]))
		sb.WriteByte('\n')
		b = b[n:]
	}
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}

// readHex reads a file written by writeHex; '#' lines are comments.
func readHex(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		b, err := hex.DecodeString(line)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, b...)
	}
	return out
}

// goldenBatches returns each golden file's name and the batch it must hold.
func goldenBatches(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	for _, c := range allCodecs {
		out["batch-"+c.String()+".hex"] = mustBuild(t, goldenOptions(c), goldenRecords())
	}
	// A raw (unframed) snappy batch, as older librdkafka and some Go clients send.
	raw := appendRecords(nil, goldenRecords(), false)
	b := mustBuild(t, goldenOptions(CodecNone), goldenRecords())
	b = append(b[:HeaderSize], s2.EncodeSnappy(nil, raw)...)
	b[offAttributes+1] |= byte(CodecSnappy)
	fixLengthAndCRC(b)
	out["batch-snappy-raw.hex"] = b
	return out
}

func fixLengthAndCRC(b []byte) {
	b[offLength], b[offLength+1], b[offLength+2], b[offLength+3] = byte((len(b)-LogOverhead)>>24), byte((len(b)-LogOverhead)>>16), byte((len(b)-LogOverhead)>>8), byte(len(b)-LogOverhead)
	crc := ComputeCRC(b)
	b[offCRC], b[offCRC+1], b[offCRC+2], b[offCRC+3] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
}

func TestGolden(t *testing.T) {
	for name, want := range goldenBatches(t) {
		path := filepath.Join("testdata", name)
		if *update {
			if err := writeHex(path, "RecordBatch v2, base offset 100, 3 records; see golden_test.go", want); err != nil {
				t.Fatal(err)
			}
		}
		got := readHex(t, path)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: Build output differs from the golden file (run with -update if the codec library changed)", name)
		}
		h, err := Validate(got, 1<<20)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if h.BaseOffset != 100 || h.NumRecords != 3 || h.MaxTimestamp != 1_700_000_000_005 {
			t.Fatalf("%s: header %+v", name, h)
		}
		recs, err := Records(got, 1<<20)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		equalRecords(t, recs, goldenRecords())
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(got); err != nil || uint32(kb.CRC) != ComputeCRC(got) {
			t.Fatalf("%s: kmsg: %v", name, err)
		}
	}
}

// TestGoldenHandChecked pins the uncompressed golden batch byte by byte
// against a decoding done by hand from the Kafka protocol guide.
func TestGoldenHandChecked(t *testing.T) {
	b := readHex(t, filepath.Join("testdata", "batch-none.hex"))
	want := "" +
		"0000000000000064" + // base offset 100
		"00000061" + // length 97 = 49 + 48 bytes of records (15 + 17 + 16)
		"00000001" + // partition leader epoch 1
		"02" + // magic
		"%08x" + // crc, checked below
		"0000" + // attributes: CreateTime, no codec
		"00000002" + // last offset delta 2
		"0000018bcfe56800" + // first timestamp 1700000000000
		"0000018bcfe56805" + // max timestamp +5
		"0000000000000005" + // producer id 5
		"0000" + // producer epoch 0
		"0000000a" + // base sequence 10
		"00000003" + // 3 records
		// record 0: length 14 (1c), attrs 0, ts 0, off 0, key null (-1 = 01), value 8 bytes, 0 headers
		"1c" + "00" + "00" + "00" + "01" + "10" + hex.EncodeToString([]byte(`{"id":1}`)) + "00" +
		// record 1: length 16 (20), ts 5 (0a), off 1 (02), key empty (00), value null (01), 1 header "trace"="abc"
		"20" + "00" + "0a" + "02" + "00" + "01" + "02" + "0a" + hex.EncodeToString([]byte("trace")) + "06" + hex.EncodeToString([]byte("abc")) +
		// record 2: length 15, ts 3 (06), off 2 (04), key "k" (02 6b), value 8 bytes, 0 headers
		"1e" + "00" + "06" + "04" + "02" + "6b" + "10" + hex.EncodeToString([]byte(`{"id":3}`)) + "00"
	want = fmt.Sprintf(want, ComputeCRC(b))
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("golden none batch:\n got %s\nwant %s", got, want)
	}
}
