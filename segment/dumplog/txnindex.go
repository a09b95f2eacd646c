package dumplog

import "encoding/binary"

// Transaction index: 34-byte AbortedTxn entries, big endian: version int16,
// producer id, first offset, last offset and last stable offset (int64
// each), as Kafka's TransactionIndex writes them.

const txnIndexEntrySize = 34

// AbortedTxn is one transaction index entry.
type AbortedTxn struct {
	Version          int16 `json:"version"`
	ProducerID       int64 `json:"producerId"`
	FirstOffset      int64 `json:"firstOffset"`
	LastOffset       int64 `json:"lastOffset"`
	LastStableOffset int64 `json:"lastStableOffset"`
}

// dumpTxnIndex prints each entry as Kafka's DumpLogSegments does, and
// reports a torn tail (a partial entry) and entries of an unknown version.
func dumpTxnIndex(out *output, path string) error {
	f, err := beginIndex(out, path, "txnindex", false)
	if err != nil {
		return err
	}
	data := f.data
	var badVersions int
	n := len(data) / txnIndexEntrySize
	for i := range n {
		e := data[i*txnIndexEntrySize:]
		a := AbortedTxn{
			Version:    int16(binary.BigEndian.Uint16(e)),
			ProducerID: int64(binary.BigEndian.Uint64(e[2:])), FirstOffset: int64(binary.BigEndian.Uint64(e[10:])),
			LastOffset: int64(binary.BigEndian.Uint64(e[18:])), LastStableOffset: int64(binary.BigEndian.Uint64(e[26:])),
		}
		if a.Version != 0 {
			badVersions++
		}
		if out.json {
			out.element(a)
			continue
		}
		out.printf("version: %d producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d\n",
			a.Version, a.ProducerID, a.FirstOffset, a.LastOffset, a.LastStableOffset)
	}
	torn := len(data) % txnIndexEntrySize
	if out.json {
		out.endArray()
		out.field("tornBytes", torn)
		out.field("unknownVersions", badVersions)
		out.endObject()
		return nil
	}
	if torn > 0 {
		out.printf("Found %d bytes at the end of %s, short of an entry\n", torn, path)
	}
	if badVersions > 0 {
		out.printf("Found %d entries of an unknown version\n", badVersions)
	}
	return nil
}
