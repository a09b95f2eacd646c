package dumplog

import "encoding/binary"

// Time index: 12-byte entries, an 8-byte timestamp and a 4-byte offset
// relative to the base offset, big endian, preallocated like the offset
// index.

const timeIndexEntrySize = 12

// TimeIndexEntry is one time index entry, with the offset made absolute.
type TimeIndexEntry struct {
	Timestamp int64 `json:"timestamp"`
	Offset    int64 `json:"offset"`
}

// TimestampMismatch is an entry whose timestamp no batch at or before its
// offset reaches: LogTimestamp is the largest max timestamp there.
type TimestampMismatch struct {
	IndexTimestamp int64 `json:"indexTimestamp"`
	LogTimestamp   int64 `json:"logTimestamp"`
	Offset         int64 `json:"offset"`
}

// OutOfOrder is an entry whose timestamp does not increase.
type OutOfOrder struct {
	IndexTimestamp    int64 `json:"indexTimestamp"`
	PreviousTimestamp int64 `json:"previousTimestamp"`
}

// OffsetNotFound is an entry whose offset no batch of the log holds:
// LogOffset is the last offset of the next batch, or -1.
type OffsetNotFound struct {
	IndexedOffset int64 `json:"indexedOffset"`
	LogOffset     int64 `json:"logOffset"`
}

func dumpTimeIndex(out *output, path string) error {
	f, err := beginIndex(out, path, "timeindex", true)
	if err != nil {
		return err
	}
	defer f.close()
	base, data, cur := f.base, f.data, f.cur
	var (
		mismatches []TimestampMismatch
		disorder   []OutOfOrder
		notFound   []OffsetNotFound
		prevTS     int64
		entries    int
	)
	for i := range len(data) / timeIndexEntrySize {
		e := data[i*timeIndexEntrySize:]
		ts, rel := int64(binary.BigEndian.Uint64(e)), binary.BigEndian.Uint32(e[8:])
		if i > 0 && rel == 0 {
			break
		}
		entry := TimeIndexEntry{Timestamp: ts, Offset: base + int64(rel)}
		entries++
		if out.json {
			out.element(entry)
		} else {
			out.printf("timestamp: %d offset: %d\n", entry.Timestamp, entry.Offset)
		}
		if i > 0 && prevTS >= ts {
			disorder = append(disorder, OutOfOrder{ts, prevTS})
		}
		prevTS = ts
		if cur == nil {
			continue
		}
		if entry.Offset < cur.h.BaseOffset {
			cur.rewind() // the index went backwards; cur.h is the last whole batch seen
		}
		for cur.ok && cur.h.LastOffset() < entry.Offset {
			cur.next()
		}
		if cur.err != nil {
			return cur.err
		}
		switch {
		case !cur.ok:
			notFound = append(notFound, OffsetNotFound{entry.Offset, -1})
		case entry.Offset < cur.h.BaseOffset:
			notFound = append(notFound, OffsetNotFound{entry.Offset, cur.h.LastOffset()})
		case cur.maxTS < entry.Timestamp:
			mismatches = append(mismatches, TimestampMismatch{entry.Timestamp, cur.maxTS, entry.Offset})
		}
	}
	f.endEntries(out, path, entries, timeIndexEntrySize)
	if out.json {
		out.field("mismatches", nonNil(mismatches))
		out.field("outOfOrder", nonNil(disorder))
		out.field("notFound", nonNil(notFound))
		out.endObject()
		return nil
	}
	if len(mismatches) > 0 {
		out.printf("Found timestamp mismatch in :%s\n", path)
		for _, m := range mismatches {
			out.printf("  Index timestamp: %d, log timestamp: %d\n", m.IndexTimestamp, m.LogTimestamp)
		}
	}
	if len(disorder) > 0 {
		out.printf("Found out of order timestamp in :%s\n", path)
		for _, m := range disorder {
			out.printf("  Index timestamp: %d, Previously indexed timestamp: %d\n", m.IndexTimestamp, m.PreviousTimestamp)
		}
	}
	if len(notFound) > 0 {
		out.printf("The following indexed offsets are not found in the log.\n")
		for _, m := range notFound {
			out.printf("Indexed offset: %d, found log offset: %d\n", m.IndexedOffset, m.LogOffset)
		}
	}
	if f.logPath != "" {
		out.printf("Checked %d time index entries against %s: %d mismatches, %d out of order, %d not found\n",
			entries, f.logPath, len(mismatches), len(disorder), len(notFound))
	}
	return nil
}
