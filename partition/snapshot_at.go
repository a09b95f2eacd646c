package partition

import (
	"fmt"

	"github.com/shale-io/shale/segment/batch"
)

// SnapshotAt returns the encoded producer state as of offset, a closed
// segment's end, for tiering to upload with the segment: the snapshot the
// roll took there when its file is intact, else one rebuilt from the newest
// intact snapshot below offset and the local batches between (the roll
// writes its snapshot without an fsync, so a crash may lose it). ok is false
// when it cannot be rebuilt: the batches between the snapshot and offset are
// no longer local.
func (r *Replica) SnapshotAt(offset int64) (data []byte, ok bool, err error) {
	if b, err := r.fs.ReadFile(snapshotName(r.dir, offset)); err == nil {
		if _, err := DecodeProducerState(b); err == nil {
			return b, true, nil
		}
	}
	ps, from := NewProducerState(), int64(0)
	offs := listSnapshots(r.fs, r.dir)
	for i := len(offs) - 1; i >= 0; i-- {
		if offs[i] >= offset {
			continue
		}
		b, err := r.fs.ReadFile(snapshotName(r.dir, offs[i]))
		if err != nil {
			continue
		}
		if p, err := DecodeProducerState(b); err == nil {
			ps, from = p, offs[i]
			break
		}
	}
	if from < r.log.LogStartOffset() {
		return nil, false, nil
	}
	for off := from; off < offset; {
		b, err := r.log.ReadBytes(off, 1<<20, offset, true)
		if err != nil {
			return nil, false, fmt.Errorf("rebuilding the producer snapshot at %d from %d: %w", offset, from, err)
		}
		next := off
		batch.Split(b, func(h *batch.Header, raw []byte) error {
			ps.Apply(h, raw)
			next = h.NextOffset()
			return nil
		})
		if next <= off {
			return nil, false, nil
		}
		off = next
	}
	return ps.Encode(), true, nil
}
