package coldread

import "github.com/shale-io/shale/controlplane"

// MaxTimestamp is the largest record timestamp held in the partition's
// remote segments that hold retained offsets (at or above the log start),
// from their metadata (no request to the bucket); ok is false when the
// partition has no retained remote data. ListOffsets MAX_TIMESTAMP
// compares it with the local log's and, when the remote one is at least as
// large, finds its first record with OffsetForTimestamp.
func (r *Reader) MaxTimestamp(topic string, p int32) (ts int64, ok bool) {
	ts = -1
	segs, start, retained := r.segmentsAndStart(topic, p)
	if !retained {
		return -1, false
	}
	for _, s := range retainedSegments(segs, start) {
		if s.State == controlplane.CopyFinished && s.MaxTimestamp > ts {
			ts, ok = s.MaxTimestamp, true
		}
	}
	return ts, ok
}
