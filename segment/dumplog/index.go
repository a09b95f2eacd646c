package dumplog

import (
	"encoding/binary"
	"fmt"
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
	f, err := beginIndex(out, path, "index", true)
	if err != nil {
		return err
	}
	defer f.close()
	base, data, cur := f.base, f.data, f.cur
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
	f.endEntries(out, path, entries, indexEntrySize)
	if out.json {
		out.field("mismatches", nonNil(mismatches))
		out.endObject()
		return nil
	}
	if len(mismatches) > 0 {
		out.printf("Mismatches in :%s\n", path)
		for _, m := range mismatches {
			out.printf("  Index offset: %d, log offset: %d (position %d: %s)\n", m.IndexOffset, m.LogOffset, m.Position, m.Reason)
		}
	}
	if f.logPath != "" {
		out.printf("Checked %d index entries against %s: %d mismatches\n", entries, f.logPath, len(mismatches))
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

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
