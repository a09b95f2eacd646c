package segment

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// offsetIndexEntrySize: 4-byte offset relative to the segment base, 4-byte
// position in the .log file, both big endian (Kafka's .index).
const offsetIndexEntrySize = 8

// offsetIndex maps offsets to .log positions, sparsely. As in Kafka, an entry
// pairs a batch's last offset with the position where that batch starts.
// Locking as mmapIndex.
type offsetIndex struct {
	*mmapIndex
	base int64
}

func (x *offsetIndex) at(i int) (offset int64, pos int64) {
	e := x.entry(i)
	return x.base + int64(binary.BigEndian.Uint32(e)), int64(binary.BigEndian.Uint32(e[4:]))
}

// lookup returns the last entry whose offset is <= target, or (base, 0) when
// there is none: the position to start scanning batch headers from.
func (x *offsetIndex) lookup(target int64) (offset int64, pos int64) {
	i := x.floor(target)
	if i < 0 {
		return x.base, 0
	}
	return x.at(i)
}

// floor is the index of the last entry with offset <= target, or -1.
func (x *offsetIndex) floor(target int64) int {
	// sort.Search finds the first entry > target.
	i := sort.Search(x.n, func(i int) bool {
		o, _ := x.at(i)
		return o > target
	})
	return i - 1
}

// floorPosition is the index of the last entry with position <= pos, or -1.
func (x *offsetIndex) floorPosition(pos int64) int {
	i := sort.Search(x.n, func(i int) bool {
		_, p := x.at(i)
		return p > pos
	})
	return i - 1
}

// append adds (offset, pos). The caller guarantees offset - base fits in
// 32 bits, offsets and positions grow, and the index is not full.
func (x *offsetIndex) append(offset int64, pos int64) {
	e := x.entry(x.n)
	binary.BigEndian.PutUint32(e, uint32(offset-x.base))
	binary.BigEndian.PutUint32(e[4:], uint32(pos))
	x.n++
}

// truncateToOffset drops the entries whose offset is >= offset.
func (x *offsetIndex) truncateToOffset(offset int64) {
	x.truncateTo(x.floor(offset-1) + 1)
}

// sanityCheck verifies that offsets and positions strictly grow and that every
// position lies inside a log of logSize bytes.
func (x *offsetIndex) sanityCheck(logSize int64) error {
	prevOff, prevPos := int64(-1), int64(-1)
	for i := 0; i < x.n; i++ {
		e := x.entry(i)
		rel, pos := int64(int32(binary.BigEndian.Uint32(e))), int64(binary.BigEndian.Uint32(e[4:]))
		if rel < 0 || rel <= prevOff || pos <= prevPos || pos >= logSize {
			return fmt.Errorf("%w: offset index entry %d (relative offset %d, position %d) after (%d, %d), log size %d",
				ErrCorruption, i, rel, pos, prevOff, prevPos, logSize)
		}
		prevOff, prevPos = rel, pos
	}
	return nil
}
