package dumplog

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shale-io/shale/segment/batch"
)

var update = flag.Bool("update", false, "rewrite the fixtures and golden outputs under testdata/")

func segmentFiles(dir, stem string) []string {
	return []string{
		filepath.Join(dir, stem+".log"),
		filepath.Join(dir, stem+".index"),
		filepath.Join(dir, stem+".timeindex"),
	}
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(m.Run())
}

// TestGoldenDumps dumps the committed fixtures and compares with the golden
// outputs. With -update it first regenerates the fixtures and the outputs.
func TestGoldenDumps(t *testing.T) {
	kafkaDir := filepath.Join("testdata", "kafka")
	damagedDir := filepath.Join("testdata", "damaged")
	if *update {
		writeFixture(t, kafkaDir)
		writeDamaged(t, damagedDir)
	}
	cases := []struct {
		golden string
		files  []string
		opts   Options
	}{
		{"kafka.txt", segmentFiles(kafkaDir, "00000000000000000000"), Options{}},
		{"kafka-records.txt", segmentFiles(kafkaDir, "00000000000000000000")[:1], Options{Records: true}},
		{"kafka.json", segmentFiles(kafkaDir, "00000000000000000000"), Options{JSON: true, Records: true}},
		{"damaged.txt", segmentFiles(damagedDir, "00000000000000000100"), Options{Records: true}},
		{"damaged.json", segmentFiles(damagedDir, "00000000000000000100"), Options{JSON: true}},
	}
	for _, tc := range cases {
		var out bytes.Buffer
		if err := Dump(&out, tc.files, tc.opts); err != nil {
			t.Fatalf("%s: Dump: %v", tc.golden, err)
		}
		path := filepath.Join("testdata", tc.golden)
		if *update {
			if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("%s differs from the dump; got:\n%s", tc.golden, out.String())
		}
	}
}

// TestKafkaFixtureFacts checks the facts of the clean fixture directly, so
// that the golden files are not the only judge.
func TestKafkaFixtureFacts(t *testing.T) {
	var out bytes.Buffer
	if err := Dump(&out, segmentFiles(filepath.Join("testdata", "kafka"), "00000000000000000000"), Options{JSON: true, Records: true}); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&out)
	var logDump struct {
		Batches []BatchInfo
		Tail    *TailProblem
	}
	if err := dec.Decode(&logDump); err != nil {
		t.Fatal(err)
	}
	if logDump.Tail != nil || len(logDump.Batches) != 4 {
		t.Fatalf("tail %+v, %d batches", logDump.Tail, len(logDump.Batches))
	}
	b := logDump.Batches
	for i, want := range []struct {
		base, last int64
		codec      string
		tsType     string
	}{{0, 2, "none", "CreateTime"}, {3, 5, "gzip", "CreateTime"}, {6, 6, "none", "CreateTime"}, {7, 8, "zstd", "LogAppendTime"}} {
		if b[i].BaseOffset != want.base || b[i].LastOffset != want.last || b[i].Codec != want.codec || b[i].TimestampType != want.tsType || !b[i].IsValid {
			t.Fatalf("batch %d: %+v", i, b[i])
		}
		if i > 0 && b[i].Position != b[i-1].Position+int64(b[i-1].Size) {
			t.Fatalf("batch %d position %d", i, b[i].Position)
		}
	}
	if b[1].ProducerID != 1000 || b[1].LastSequence != 2 || b[1].Records[2].Sequence != 2 || *b[1].Records[2].Value != "gzip record three" {
		t.Fatalf("gzip batch: %+v", b[1])
	}
	if !b[2].IsControl || !b[2].IsTransactional || b[2].Records[0].EndTxnMarker != "COMMIT" || *b[2].Records[0].CoordinatorEpoch != 5 {
		t.Fatalf("control batch: %+v", b[2])
	}
	if r := b[3].Records[0]; r.Timestamp != 1_700_000_000_099 || r.ValueEncoding != "hex" || *r.Value != "ff0010" || r.Key != nil {
		t.Fatalf("LogAppendTime record: %+v", r)
	}
	var idx struct {
		Entries       []IndexEntry
		Mismatches    []IndexMismatch
		UnusedEntries int
	}
	if err := dec.Decode(&idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Entries) != 2 || len(idx.Mismatches) != 0 || idx.UnusedEntries != 3 || idx.Entries[1].Position != b[3].Position {
		t.Fatalf("index: %+v", idx)
	}
	var tidx struct {
		Entries                          []TimeIndexEntry
		Mismatches, OutOfOrder, NotFound []json.RawMessage
	}
	if err := dec.Decode(&tidx); err != nil {
		t.Fatal(err)
	}
	if len(tidx.Entries) != 2 || len(tidx.Mismatches)+len(tidx.OutOfOrder)+len(tidx.NotFound) != 0 {
		t.Fatalf("time index: %+v", tidx)
	}
}

// TestDamagedFacts checks each planted fault is reported.
func TestDamagedFacts(t *testing.T) {
	var out bytes.Buffer
	if err := Dump(&out, segmentFiles(filepath.Join("testdata", "damaged"), "00000000000000000100"), Options{}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"baseOffset: 100 lastOffset: 102 count: 3",
		"isvalid: false",
		"Found 80 invalid bytes at the end of",
		"Index offset: 105, log offset: -1",
		"Index offset: 109, log offset: 108",
		"Index offset: 110, log offset: -1",
		"Checked 5 index entries",
		"3 mismatches",
		"Found 3 stray bytes",
		"Index timestamp: 1700000000500, log timestamp: 1700000000030",
		"Index timestamp: 1700000000400, Previously indexed timestamp: 1700000000500",
		"Indexed offset: 120, found log offset: -1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("damaged dump lacks %q", want)
		}
	}
	if strings.Contains(text, "Index offset: 102,") || strings.Contains(text, "Index offset: 107,") {
		t.Errorf("good index entries reported as mismatches:\n%s", text)
	}
}

// TestShaleBuiltSegment dumps a segment written with Shale's own builder,
// in every codec, and checks each record comes back.
func TestShaleBuiltSegment(t *testing.T) {
	dir := t.TempDir()
	var log []byte
	for i, c := range []batch.Codec{batch.CodecNone, batch.CodecGzip, batch.CodecSnappy, batch.CodecLZ4, batch.CodecZstd} {
		opts := batch.NoProducer()
		opts.BaseOffset, opts.Codec, opts.FirstTimestamp = int64(i*2), c, 1000
		var err error
		log, err = batch.Build(log, opts, []batch.Record{{Value: []byte("v-" + c.String())}, {Key: []byte("k"), Value: []byte("w")}})
		if err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "00000000000000000000.log")
	if err := os.WriteFile(path, log, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Dump(&out, []string{path}, Options{Records: true}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		if !strings.Contains(out.String(), "compresscodec: "+c+" ") || !strings.Contains(out.String(), "payload: v-"+c+"\n") {
			t.Errorf("dump lacks the %s batch:\n%s", c, out.String())
		}
	}
	if strings.Count(out.String(), "isvalid: true") != 5 || strings.Contains(out.String(), "invalid bytes") {
		t.Errorf("dump:\n%s", out.String())
	}
}

func TestDumpErrors(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	missing := filepath.Join(dir, "00000000000000000000.log")
	badName := filepath.Join(dir, "segment.index")
	if err := os.WriteFile(badName, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "leader-epoch-checkpoint")
	err := Dump(&out, []string{missing, badName, other}, Options{})
	if !errors.Is(err, os.ErrNotExist) || !errors.Is(err, ErrFileName) {
		t.Fatalf("Dump error: %v", err)
	}
	if !strings.Contains(out.String(), "Ignoring unknown file "+other) {
		t.Fatalf("output: %s", out.String())
	}
	// An index with no .log beside it is dumped unchecked.
	idx := filepath.Join(dir, "00000000000000000042.index")
	if err := os.WriteFile(idx, indexBytes([][2]uint32{{1, 0}, {3, 100}}, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := Dump(&out, []string{idx}, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "offset: 45 position: 100") || !strings.Contains(out.String(), "entries not checked") {
		t.Fatalf("output: %s", out.String())
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestDumpWriteError(t *testing.T) {
	files := segmentFiles(filepath.Join("testdata", "kafka"), "00000000000000000000")
	if err := Dump(failWriter{}, files, Options{Records: true}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Dump to a failing writer: %v", err)
	}
}
