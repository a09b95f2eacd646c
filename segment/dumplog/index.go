package dumplog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Offset index: 8-byte entries, a 4-byte offset relative to the segment's
// base offset and a 4-byte file position, big endian. Kafka preallocates the
// file with zeros; as in Kafka, an entry after the first whose relative
// offset is 0 ends the entries, and the rest is unused space.

const indexEntrySize = 8

// IndexEntry is one offset index entry, with the offset made absolute.
type IndexEntry struct {
	Offset   int64 `json:"offset"`
	Position int64 `json:"position"`
}

// IndexMismatch is an entry that does not agree with the .log: LogOffset
// is the last offset of the batch found at the position, or -1.
type IndexMismatch struct {
	IndexOffset int64  `json:"indexOffset"`
	LogOffset   int64  `json:"logOffset"`
	Position    int64  `json:"position"`
	Reason      string `json:"reason"`
}

func dumpIndex(out *output, path string) error {
	base, err := baseOffsetOf(path)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	logPath := logBeside(path)
	cur, lf, err := openCursor(logPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		cur, logPath = nil, ""
	case err != nil:
		return err
	default:
		defer lf.Close()
	}

	if out.json {
		out.beginObject("file", path, "kind", "index", "baseOffset", base, "log", logPath)
		out.beginArray("entries")
	} else {
		out.printf("Dumping %s\n", path)
	}
	n := len(data) / indexEntrySize
	var (
		mismatches []IndexMismatch
		prev       IndexEntry
		entries    int
	)
	for i := range n {
		e := data[i*indexEntrySize:]
		rel, posn := binary.BigEndian.Uint32(e), binary.BigEndian.Uint32(e[4:])
		if i > 0 && rel == 0 {
			break
		}
		entry := IndexEntry{Offset: base + int64(rel), Position: int64(posn)}
		entries++
		if out.json {
			out.element(entry)
		} else {
			out.printf("offset: %d position: %d\n", entry.Offset, entry.Position)
		}
		if i > 0 && (entry.Offset <= prev.Offset || entry.Position < prev.Position) {
			mismatches = append(mismatches, IndexMismatch{entry.Offset, -1, entry.Position,
				fmt.Sprintf("out of order after offset %d position %d", prev.Offset, prev.Position)})
		} else if cur != nil {
			if m, bad := checkIndexEntry(cur, entry); bad {
				mismatches = append(mismatches, m)
			}
			if cur.err != nil {
				return cur.err
			}
		}
		prev = entry
	}
	unused, stray := trailer(data[entries*indexEntrySize:], indexEntrySize)

	if out.json {
		out.endArray()
		out.field("unusedEntries", unused)
		out.field("strayBytes", stray)
		out.field("mismatches", nonNil(mismatches))
		out.endObject()
		return nil
	}
	printTrailer(out, path, logPath, unused, stray)
	if len(mismatches) > 0 {
		out.printf("Mismatches in :%s\n", path)
		for _, m := range mismatches {
			out.printf("  Index offset: %d, log offset: %d (position %d: %s)\n", m.IndexOffset, m.LogOffset, m.Position, m.Reason)
		}
	}
	if logPath != "" {
		out.printf("Checked %d index entries against %s: %d mismatches\n", entries, logPath, len(mismatches))
	}
	return nil
}

// checkIndexEntry checks that e.Position is a batch boundary of the log and
// that the batch there holds e.Offset. Kafka writes the batch's last offset;
// any offset inside the batch is accepted.
func checkIndexEntry(cur *batchCursor, e IndexEntry) (IndexMismatch, bool) {
	if e.Position < cur.pos {
		cur.rewind()
	}
	for cur.ok && cur.pos < e.Position {
		cur.next()
	}
	switch {
	case !cur.ok:
		reason := "past the last whole batch"
		if cur.reason != "" {
			reason += " (" + cur.reason + ")"
		}
		return IndexMismatch{e.Offset, -1, e.Position, reason}, true
	case cur.pos != e.Position:
		return IndexMismatch{e.Offset, -1, e.Position, fmt.Sprintf("not a batch boundary (batch at %d)", cur.pos)}, true
	case e.Offset < cur.h.BaseOffset || e.Offset > cur.h.LastOffset():
		return IndexMismatch{e.Offset, cur.h.LastOffset(), e.Position,
			fmt.Sprintf("batch holds offsets %d to %d", cur.h.BaseOffset, cur.h.LastOffset())}, true
	}
	return IndexMismatch{}, false
}

// trailer counts the unused entries after the last one and the bytes in
// them that are not zero (plus a partial entry at the end).
func trailer(rest []byte, size int) (unused, stray int) {
	unused = len(rest) / size
	for _, b := range rest[:unused*size] {
		if b != 0 {
			stray++
		}
	}
	return unused, stray + len(rest)%size
}

func printTrailer(out *output, path, logPath string, unused, stray int) {
	if unused > 0 {
		out.printf("%d unused preallocated entries\n", unused)
	}
	if stray > 0 {
		out.printf("Found %d stray bytes after the last entry of %s\n", stray, path)
	}
	if logPath == "" {
		out.printf("No .log beside %s: entries not checked\n", path)
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
