package dumplog

import (
	"errors"
	"io/fs"
	"os"
)

// indexFile is an index file being dumped (.index, .timeindex or
// .txnindex): read whole, with a cursor on the .log beside it when its
// entries are checked against one.
type indexFile struct {
	base    int64
	data    []byte
	logPath string       // the .log beside; "" when there is none or no check
	cur     *batchCursor // on logPath; nil when logPath is ""
	log     *os.File     // under cur; nil when cur is
}

// beginIndex reads the index file at path and begins its dump: the JSON
// object of kind with its entries array open, or the "Dumping" line. With
// checked it also opens a cursor on the .log beside it (none when there is
// no such file) and names that file in the JSON object ("" for none). The
// caller closes f.
func beginIndex(out *output, path, kind string, checked bool) (*indexFile, error) {
	base, err := baseOffsetOf(path)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f := &indexFile{base: base, data: data}
	fields := []any{"file", path, "kind", kind, "baseOffset", base}
	if checked {
		f.logPath = logBeside(path)
		f.cur, f.log, err = openCursor(f.logPath)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			f.logPath = ""
		case err != nil:
			return nil, err
		}
		fields = append(fields, "log", f.logPath)
	}
	if out.json {
		out.beginObject(fields...)
		out.beginArray("entries")
	} else {
		out.printf("Dumping %s\n", path)
	}
	return f, nil
}

// close closes the .log, if one was opened.
func (f *indexFile) close() {
	if f.log != nil {
		f.log.Close()
	}
}

// endEntries ends the entries, the first n of size bytes each, and reports
// the space after them: the unused preallocated entries and the bytes in
// them that are not zero (plus a partial entry at the end). In JSON it
// closes the entries array and writes unusedEntries and strayBytes, and
// the caller writes its own fields and ends the object; in text it prints
// them, and says when no .log was there to check against.
func (f *indexFile) endEntries(out *output, path string, n, size int) {
	rest := f.data[n*size:]
	unused, stray := len(rest)/size, len(rest)%size
	for _, b := range rest[:unused*size] {
		if b != 0 {
			stray++
		}
	}
	if out.json {
		out.endArray()
		out.field("unusedEntries", unused)
		out.field("strayBytes", stray)
		return
	}
	if unused > 0 {
		out.printf("%d unused preallocated entries\n", unused)
	}
	if stray > 0 {
		out.printf("Found %d stray bytes after the last entry of %s\n", stray, path)
	}
	if f.logPath == "" {
		out.printf("No .log beside %s: entries not checked\n", path)
	}
}
