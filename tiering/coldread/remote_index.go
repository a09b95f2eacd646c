package coldread

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// ErrCorruptIndex: a remote .index or .timeindex object whose entries do not
// grow or point outside their segment.
var ErrCorruptIndex = errors.New("coldread: corrupt remote index")

// offsetIndex is a parsed remote .index (Kafka's format: 4-byte offset
// relative to the base, 4-byte position, big endian; an entry pairs a batch's
// last offset with that batch's start position).
type offsetIndex struct {
	offsets   []int64 // absolute
	positions []int64
}

// parseOffsetIndex parses b for a segment at base of logSize bytes. A
// trailing partial entry is ignored, as Kafka does.
func parseOffsetIndex(b []byte, base, logSize int64) (*offsetIndex, error) {
	n := len(b) / 8
	x := &offsetIndex{offsets: make([]int64, n), positions: make([]int64, n)}
	for i := range n {
		rel := int64(int32(binary.BigEndian.Uint32(b[i*8:])))
		pos := int64(binary.BigEndian.Uint32(b[i*8+4:]))
		if rel < 0 || pos >= logSize || (i > 0 && (base+rel <= x.offsets[i-1] || pos <= x.positions[i-1])) {
			return nil, fmt.Errorf("%w: offset index entry %d (relative offset %d, position %d), log size %d",
				ErrCorruptIndex, i, rel, pos, logSize)
		}
		x.offsets[i], x.positions[i] = base+rel, pos
	}
	return x, nil
}

// lookup returns the position of the last entry whose offset is <= target,
// or 0: where to start scanning batch headers for target.
func (x *offsetIndex) lookup(target int64) int64 {
	i := sort.Search(len(x.offsets), func(i int) bool { return x.offsets[i] > target })
	if i == 0 {
		return 0
	}
	return x.positions[i-1]
}

// floorPosition returns the position of the last entry whose position is
// <= pos, or -1 when there is none.
func (x *offsetIndex) floorPosition(pos int64) int64 {
	i := sort.Search(len(x.positions), func(i int) bool { return x.positions[i] > pos })
	if i == 0 {
		return -1
	}
	return x.positions[i-1]
}

func (x *offsetIndex) bytes() int64 { return int64(len(x.offsets))*16 + 64 }

// timeIndex is a parsed remote .timeindex (8-byte timestamp, 4-byte relative
// offset, big endian): entry (t, o) says the largest timestamp up to offset
// o is t.
type timeIndex struct {
	timestamps []int64
	offsets    []int64 // absolute
}

func parseTimeIndex(b []byte, base, end int64) (*timeIndex, error) {
	n := len(b) / 12
	x := &timeIndex{timestamps: make([]int64, n), offsets: make([]int64, n)}
	for i := range n {
		ts := int64(binary.BigEndian.Uint64(b[i*12:]))
		rel := int64(int32(binary.BigEndian.Uint32(b[i*12+8:])))
		off := base + rel
		if rel < 0 || off > end || (i > 0 && (ts <= x.timestamps[i-1] || off <= x.offsets[i-1])) {
			return nil, fmt.Errorf("%w: time index entry %d (timestamp %d, relative offset %d), end offset %d",
				ErrCorruptIndex, i, ts, rel, end)
		}
		x.timestamps[i], x.offsets[i] = ts, off
	}
	return x, nil
}

// lookup returns the offset of the last entry whose timestamp is below
// target (every record up to it is older than target, so the first record at
// or after target lies in the batch holding that offset or later), or base.
func (x *timeIndex) lookup(target, base int64) int64 {
	i := sort.Search(len(x.timestamps), func(i int) bool { return x.timestamps[i] >= target })
	if i == 0 {
		return base
	}
	return x.offsets[i-1]
}

func (x *timeIndex) bytes() int64 { return int64(len(x.offsets))*16 + 64 }
