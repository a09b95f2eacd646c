package segment

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// timeIndexEntrySize: 8-byte timestamp, 4-byte offset relative to the segment
// base, both big endian (Kafka's .timeindex).
const timeIndexEntrySize = 12

// timeIndex maps timestamps to offsets, sparsely: an entry (t, o) says the
// largest timestamp in the segment up to offset o is t. As in Kafka, entries
// are added only when t grows. Locking as mmapIndex.
type timeIndex struct {
	*mmapIndex
	base int64
}

func (x *timeIndex) at(i int) (ts int64, offset int64) {
	e := x.entry(i)
	return int64(binary.BigEndian.Uint64(e)), x.base + int64(binary.BigEndian.Uint32(e[8:]))
}

// last returns the last entry, or (-1, base) when there is none.
func (x *timeIndex) last() (ts int64, offset int64) {
	if x.n == 0 {
		return -1, x.base
	}
	return x.at(x.n - 1)
}

// lookup returns the last entry whose timestamp is <= target, or (-1, base).
func (x *timeIndex) lookup(target int64) (ts int64, offset int64) {
	i := sort.Search(x.n, func(i int) bool {
		t, _ := x.at(i)
		return t > target
	})
	if i == 0 {
		return -1, x.base
	}
	return x.at(i - 1)
}

// maybeAppend adds (ts, offset) if ts is larger than the last entry's
// timestamp and offset is past the last entry's offset. The caller guarantees
// room (not full) and a 32-bit relative offset.
func (x *timeIndex) maybeAppend(ts int64, offset int64) {
	if x.n > 0 {
		lt, lo := x.at(x.n - 1)
		if ts <= lt || offset <= lo {
			return
		}
	}
	e := x.entry(x.n)
	binary.BigEndian.PutUint64(e, uint64(ts))
	binary.BigEndian.PutUint32(e[8:], uint32(offset-x.base))
	x.n++
}

// truncateToOffset drops the entries whose offset is >= offset.
func (x *timeIndex) truncateToOffset(offset int64) {
	i := sort.Search(x.n, func(i int) bool {
		_, o := x.at(i)
		return o >= offset
	})
	x.truncateTo(i)
}

// sanityCheck verifies that timestamps and offsets strictly grow and that every
// offset lies below next (the segment's next offset).
func (x *timeIndex) sanityCheck(next int64) error {
	prevTs, prevOff := int64(-1<<63), int64(-1)
	for i := 0; i < x.n; i++ {
		e := x.entry(i)
		ts, rel := int64(binary.BigEndian.Uint64(e)), int64(int32(binary.BigEndian.Uint32(e[8:])))
		if rel < 0 || ts <= prevTs || rel <= prevOff || x.base+rel >= next {
			return fmt.Errorf("%w: time index entry %d (timestamp %d, relative offset %d) after (%d, %d), next offset %d",
				ErrCorruption, i, ts, rel, prevTs, prevOff, next)
		}
		prevTs, prevOff = ts, rel
	}
	return nil
}
