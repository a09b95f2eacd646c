package dumplog

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

func txnEntry(version int16, pid, first, last, lso int64) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(version))
	for _, v := range []int64{pid, first, last, lso} {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// TestDumpTxnIndex: each aborted transaction printed as Kafka's
// DumpLogSegments prints it, in text and JSON, with a torn tail and an
// unknown version reported.
func TestDumpTxnIndex(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "00000000000000000100.txnindex")
	data := append(txnEntry(0, 7, 100, 104, 103), txnEntry(0, 8, 103, 110, 111)...)
	data = append(data, txnEntry(1, 9, 111, 112, 113)...)
	data = append(data, 0, 0, 0)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Dump(&out, []string{path}, Options{}); err != nil {
		t.Fatal(err)
	}
	want := "Dumping " + path + "\n" +
		"version: 0 producerId: 7 firstOffset: 100 lastOffset: 104 lastStableOffset: 103\n" +
		"version: 0 producerId: 8 firstOffset: 103 lastOffset: 110 lastStableOffset: 111\n" +
		"version: 1 producerId: 9 firstOffset: 111 lastOffset: 112 lastStableOffset: 113\n" +
		"Found 3 bytes at the end of " + path + ", short of an entry\n" +
		"Found 1 entries of an unknown version\n"
	if out.String() != want {
		t.Fatalf("text dump:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	if err := Dump(&out, []string{path}, Options{JSON: true}); err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"file":"` + path + `","kind":"txnindex","baseOffset":100,"entries":[` +
		`{"version":0,"producerId":7,"firstOffset":100,"lastOffset":104,"lastStableOffset":103},` +
		`{"version":0,"producerId":8,"firstOffset":103,"lastOffset":110,"lastStableOffset":111},` +
		`{"version":1,"producerId":9,"firstOffset":111,"lastOffset":112,"lastStableOffset":113}],"tornBytes":3,"unknownVersions":1}` + "\n"
	if out.String() != wantJSON {
		t.Fatalf("JSON dump:\n%s\nwant:\n%s", out.String(), wantJSON)
	}
}
