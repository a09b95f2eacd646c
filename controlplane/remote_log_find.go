package controlplane

// Lookups over a partition's remote segments, as pure functions of a
// ListRemoteSegments result (sorted by base offset) and as RemoteLog methods
// over the cache. Only CopyFinished segments are readable: CopyStarted ones
// may be incomplete, DeleteStarted ones may already be partly gone.

// RemoteLogStartOffset returns the lowest base offset of the partition's
// CopyFinished segments; ok is false when there is none.
func (rl *RemoteLog) RemoteLogStartOffset(id TopicID, p int32) (int64, bool) {
	return RemoteLogStartOffset(rl.ListRemoteSegments(id, p))
}

// RemoteLogEndOffset returns the last offset (inclusive) of the partition's
// highest CopyFinished segment; ok is false when there is none.
func (rl *RemoteLog) RemoteLogEndOffset(id TopicID, p int32) (int64, bool) {
	return RemoteLogEndOffset(rl.ListRemoteSegments(id, p))
}

// SegmentForOffset returns the CopyFinished segment holding offset.
func (rl *RemoteLog) SegmentForOffset(id TopicID, p int32, offset int64) (RemoteSegment, bool) {
	return SegmentForOffset(rl.ListRemoteSegments(id, p), offset)
}

// SegmentForTimestamp returns the first CopyFinished segment that may hold a
// record with timestamp >= ts.
func (rl *RemoteLog) SegmentForTimestamp(id TopicID, p int32, ts int64) (RemoteSegment, bool) {
	return SegmentForTimestamp(rl.ListRemoteSegments(id, p), ts)
}

// RemoteLogStartOffset: see RemoteLog.RemoteLogStartOffset. segs must be
// sorted by base offset.
func RemoteLogStartOffset(segs []RemoteSegment) (int64, bool) {
	for _, s := range segs {
		if s.State == CopyFinished {
			return s.BaseOffset, true
		}
	}
	return 0, false
}

// RemoteLogEndOffset: see RemoteLog.RemoteLogEndOffset.
func RemoteLogEndOffset(segs []RemoteSegment) (int64, bool) {
	end, ok := int64(-1), false
	for _, s := range segs {
		if s.State == CopyFinished && s.EndOffset > end {
			end, ok = s.EndOffset, true
		}
	}
	return end, ok
}

// SegmentForOffset returns the CopyFinished segment with BaseOffset <= offset
// <= EndOffset. When segments overlap (two leaders uploaded the same
// offsets) the one written at the higher leader epoch wins.
func SegmentForOffset(segs []RemoteSegment, offset int64) (RemoteSegment, bool) {
	var best RemoteSegment
	found := false
	for _, s := range segs {
		if s.BaseOffset > offset {
			break
		}
		if s.State != CopyFinished || s.EndOffset < offset {
			continue
		}
		if !found || s.LeaderEpoch > best.LeaderEpoch {
			best, found = s, true
		}
	}
	if found {
		best = best.clone()
	}
	return best, found
}

// SegmentForTimestamp returns the CopyFinished segment with the lowest base
// offset whose MaxTimestamp >= ts: the first offset with a timestamp >= ts
// (ListOffsets' answer) lies in it, found through its .timeindex.
func SegmentForTimestamp(segs []RemoteSegment, ts int64) (RemoteSegment, bool) {
	for _, s := range segs {
		if s.State == CopyFinished && s.MaxTimestamp >= ts {
			return s.clone(), true
		}
	}
	return RemoteSegment{}, false
}
