package segment

import (
	"sort"

	"github.com/shale-io/shale/segment/batch"
)

// tailBatches is how many of the active segment's newest batches keep
// their place in memory. A read at the tail (a follower, a consumer that
// keeps up) then finds its batch, and the batches after it, without reading
// batch headers from the file: with the sparse index (an entry per
// index.interval.bytes) a fetch of the newest small batch had read up to
// four 61-byte headers, one pread each, before the batch itself.
const tailBatches = 16

// tailEntry is one batch's place: enough of its header for a read
// (offsets and size), not its timestamps or producer fields.
type tailEntry struct {
	pos       int64
	base      int64
	length    int32 // batch.Header.Length
	lastDelta int32
}

func (e *tailEntry) header() batch.Header {
	return batch.Header{BaseOffset: e.base, Length: e.length, LastOffsetDelta: e.lastDelta}
}

func (e *tailEntry) last() int64 { return e.base + int64(e.lastDelta) }

// tailRing is the newest tailBatches batches of the active segment, oldest
// first, in file order. The writer adds to it under l.mu (write) as it
// applies each batch; readers use it under l.mu (read). A roll drops it
// from the old segment and a truncation drops the entries it cut.
type tailRing struct {
	e    [tailBatches]tailEntry
	head int // index of the oldest entry
	n    int
}

// at is the i-th oldest entry.
func (t *tailRing) at(i int) *tailEntry { return &t.e[(t.head+i)%tailBatches] }

// add records the batch h written at pos, after every batch it holds.
func (t *tailRing) add(h *batch.Header, pos int64) {
	e := tailEntry{pos: pos, base: h.BaseOffset, length: h.Length, lastDelta: h.LastOffsetDelta}
	if t.n < tailBatches {
		t.e[(t.head+t.n)%tailBatches] = e
		t.n++
		return
	}
	t.e[t.head] = e
	t.head = (t.head + 1) % tailBatches
}

// find returns the first batch whose last offset is at or after target,
// as segment.findBatch would, when the answer is known from the ring:
// target is at or after the oldest entry's base offset and at or before
// the newest entry's last offset.
func (t *tailRing) find(target int64) (pos int64, h batch.Header, ok bool) {
	if t.n == 0 || target < t.at(0).base || target > t.at(t.n-1).last() {
		return 0, batch.Header{}, false
	}
	i := sort.Search(t.n, func(i int) bool { return t.at(i).last() >= target })
	e := t.at(i)
	return e.pos, e.header(), true
}

// headerAt returns the header fields of the batch that starts at pos, if
// the ring holds it.
func (t *tailRing) headerAt(pos int64) (batch.Header, bool) {
	if t.n == 0 || pos < t.at(0).pos || pos > t.at(t.n-1).pos {
		return batch.Header{}, false
	}
	i := sort.Search(t.n, func(i int) bool { return t.at(i).pos >= pos })
	if e := t.at(i); e.pos == pos {
		return e.header(), true
	}
	return batch.Header{}, false
}

// truncate drops the entries of batches at or after pos.
func (t *tailRing) truncate(pos int64) {
	for t.n > 0 && t.at(t.n-1).pos >= pos {
		t.n--
	}
}
