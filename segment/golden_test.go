package segment

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// writeGoldenLog writes a small deterministic log: 10 batches of 2 records
// with fixed timestamps, epochs 0, 1 and 2, a roll after the sixth batch,
// index.interval.bytes 100; then closes it.
func writeGoldenLog(t *testing.T, dir string) {
	cfg := testConfig(newFakeClock())
	cfg.IndexIntervalBytes = 100
	l := openLog(t, dir, cfg)
	epochs := []int32{0, 0, 1, 1, 1, 1, 2, 2, 2, 2}
	// Timestamps go back and forth so the time index skips some entries.
	firstTs := []int64{0, 10, 5, 30, 40, 35, 60, 61, 62, 50}
	for i := range epochs {
		mustAppend(t, l, buildBatch(t, batchSpec{records: 2, firstTs: firstTs[i], tsDeltas: []int64{0, 1}, valueSize: 10}), epochs[i])
		if i == 5 {
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestGoldenFiles compares every file of the golden log with testdata/golden.
// Run with -update to rewrite them after an intended format change.
func TestGoldenFiles(t *testing.T) {
	dir := t.TempDir()
	writeGoldenLog(t, dir)
	golden := filepath.Join("testdata", "golden")
	names := dirNames(t, dir)
	if *update {
		os.RemoveAll(golden)
		if err := os.MkdirAll(golden, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			b, _ := os.ReadFile(filepath.Join(dir, n))
			if err := os.WriteFile(filepath.Join(golden, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if want := dirNames(t, golden); strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("files %v, golden %v", names, want)
	}
	for _, n := range names {
		got, _ := os.ReadFile(filepath.Join(dir, n))
		want, _ := os.ReadFile(filepath.Join(golden, n))
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from golden:\n got  %x\n want %x", n, got, want)
		}
	}
	// The .log bytes are Kafka's: franz-go decodes every batch with its CRC.
	b, _ := os.ReadFile(filepath.Join(dir, fileName(0, logSuffix)))
	rbs := decodeBatches(t, b)
	if len(rbs) != 6 || rbs[5].FirstOffset != 10 || rbs[2].PartitionLeaderEpoch != 1 {
		t.Fatalf("decoded %d batches", len(rbs))
	}
	if cp, _ := os.ReadFile(filepath.Join(dir, epochCheckpointFile)); string(cp) != "0\n3\n0 0\n1 4\n2 12\n" {
		t.Fatalf("checkpoint %q", cp)
	}
}

func dirNames(t *testing.T, dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// TestIndexLookups is data driven: testdata/index_lookups.txt lists, for the
// golden log, "offset -> segment base, index entry (offset position), batch
// position". Each line is checked against the index and the batch scan, and
// each index entry must point at a batch that ends at the entry's offset.
func TestIndexLookups(t *testing.T) {
	dir := t.TempDir()
	writeGoldenLog(t, dir)
	l := openLog(t, dir, testConfig(newFakeClock()))
	defer l.Close()
	got := indexLookups(t, l)
	path := filepath.Join("testdata", "index_lookups.txt")
	if *update {
		os.WriteFile(path, []byte(got), 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("lookups differ:\n%s\nwant\n%s", got, want)
	}
}

// indexLookups looks every offset of l up through the indexes and returns
// one line per offset: segment base, index entry, batch position. It fails
// the test when an index entry points past the batch or at a batch that
// does not end at the entry's offset.
func indexLookups(t *testing.T, l *Log) string {
	t.Helper()
	var lines []string
	l.mu.RLock()
	defer l.mu.RUnlock()
	for off := int64(0); off < l.mu.leo; off++ {
		s := l.mu.segments[l.segmentFor(off)]
		eo, ep := s.idx.lookup(off)
		pos, h, found, err := s.findBatch(off, s.size)
		if err != nil || !found {
			t.Fatalf("offset %d: %v %v", off, found, err)
		}
		if eo > off || ep > pos {
			t.Fatalf("offset %d: index entry (%d, %d) past batch at %d", off, eo, ep, pos)
		}
		if off < h.BaseOffset || off > h.LastOffset() {
			t.Fatalf("offset %d: batch [%d, %d]", off, h.BaseOffset, h.LastOffset())
		}
		lines = append(lines, fmt.Sprintf("%d -> %d, (%d %d), %d", off, s.base, eo, ep, pos))
	}
	for _, s := range l.mu.segments {
		var buf [batchHeaderSize]byte
		for i := 0; i < s.idx.n; i++ {
			o, p := s.idx.at(i)
			h, err := s.readHeader(p, s.size, &buf)
			if err != nil || h.LastOffset() != o {
				t.Fatalf("index entry (%d, %d): batch ends at %d, %v", o, p, h.LastOffset(), err)
			}
		}
	}
	return strings.Join(lines, "\n") + "\n"
}
