package restore

import (
	"cmp"
	"slices"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/tiering"
)

// OffsetRange is [First, Last], inclusive.
type OffsetRange struct {
	First int64 `json:"first"`
	Last  int64 `json:"last"`
}

// Skipped is an uploaded segment the restore leaves out, and why.
type Skipped struct {
	SegmentID string `json:"segment_id"`
	Base      int64  `json:"base_offset"`
	End       int64  `json:"end_offset"`
	Why       string `json:"why"`
}

// PartitionPlan is what the bucket holds of one partition and what a
// restore makes of it (PlanPartition).
type PartitionPlan struct {
	// Segments are the segments restored, in offset order: one
	// leader-epoch lineage, each reaching past the previous one's end.
	Segments []tiering.Manifest
	// Skipped are the complete segments left out: copies outside the
	// lineage (an older leader's upload of offsets a later leader
	// replaced) and copies whose offsets the chosen ones cover.
	Skipped []Skipped
	// Gaps are offset ranges between LogStart and NextOffset that no
	// restored segment holds (deleted objects): they are lost.
	Gaps []OffsetRange
	// LogStart is the first restored offset, NextOffset the one after the
	// last (0 and 0 with no segment).
	LogStart, NextOffset int64
	// MaxEpoch is the largest leader epoch in the restored data; the
	// restored partition leads at MaxEpoch+1.
	MaxEpoch int32
	// LastUpload is the time of the newest restored segment's upload, and
	// HighWatermark the partition's high watermark then (0: not recorded,
	// a manifest from before the field).
	LastUpload    time.Time
	HighWatermark int64
}

// NotUploaded is how many offsets, at least, were never uploaded: the
// high watermark at the last upload minus NextOffset; -1 when unknown.
// Anything produced after the last upload comes on top.
func (p PartitionPlan) NotUploaded() int64 {
	if p.HighWatermark <= 0 {
		return -1
	}
	return max(p.HighWatermark-p.NextOffset, 0)
}

// PlanPartition chooses, from the complete segments of one partition
// (their manifests) and the leader-epoch history of the one ending last
// (its epochs object; nil when unread), the chain to restore. It is a pure
// function of its inputs.
//
// A segment belongs to the lineage when each of its own epoch entries
// agrees with history at the offsets it holds (as the tiering pass's
// lineage rule); without a history every segment does. The chain starts
// at the lowest base offset and takes, at each next offset, the segment
// holding it that reaches furthest (the higher leader epoch on a tie);
// where none holds it, the offsets up to the next segment are a gap.
func PlanPartition(ms []tiering.Manifest, history []controlplane.EpochEntry) PartitionPlan {
	var plan PartitionPlan
	var in []tiering.Manifest
	for _, m := range ms {
		if history != nil && !agrees(m, history) {
			plan.Skipped = append(plan.Skipped, skip(m, "outside the leader-epoch lineage of the last upload"))
			continue
		}
		in = append(in, m)
	}
	slices.SortFunc(in, func(a, b tiering.Manifest) int {
		return cmp.Or(cmp.Compare(a.BaseOffset, b.BaseOffset), cmp.Compare(b.EndOffset, a.EndOffset),
			cmp.Compare(b.LeaderEpoch, a.LeaderEpoch), cmp.Compare(a.SegmentID, b.SegmentID))
	})
	if len(in) == 0 {
		return plan
	}
	used := make([]bool, len(in))
	next := in[0].BaseOffset
	plan.LogStart = next
	for {
		best := -1
		for i, m := range in {
			if used[i] || m.BaseOffset > next || m.EndOffset < next {
				continue
			}
			if best < 0 || m.EndOffset > in[best].EndOffset ||
				(m.EndOffset == in[best].EndOffset && m.LeaderEpoch > in[best].LeaderEpoch) {
				best = i
			}
		}
		if best < 0 {
			// The first segment starting above next, if any: a gap.
			gapEnd := int64(-1)
			for i, m := range in {
				if !used[i] && m.BaseOffset > next && (gapEnd < 0 || m.BaseOffset < gapEnd) {
					gapEnd = m.BaseOffset
				}
			}
			if gapEnd < 0 {
				break
			}
			plan.Gaps = append(plan.Gaps, OffsetRange{First: next, Last: gapEnd - 1})
			next = gapEnd
			continue
		}
		used[best] = true
		plan.Segments = append(plan.Segments, in[best])
		next = in[best].EndOffset + 1
	}
	plan.NextOffset = next
	for i, m := range in {
		if !used[i] {
			plan.Skipped = append(plan.Skipped, skip(m, "its offsets are in the restored segments"))
		}
	}
	for _, m := range plan.Segments {
		plan.MaxEpoch = max(plan.MaxEpoch, m.LeaderEpoch)
		for _, e := range m.SegmentEpochs {
			plan.MaxEpoch = max(plan.MaxEpoch, e.Epoch)
		}
		if m.CreatedAt.After(plan.LastUpload) {
			plan.LastUpload = m.CreatedAt
		}
		plan.HighWatermark = max(plan.HighWatermark, m.HighWatermark)
	}
	for _, e := range history {
		plan.MaxEpoch = max(plan.MaxEpoch, e.Epoch)
	}
	return plan
}

func skip(m tiering.Manifest, why string) Skipped {
	return Skipped{SegmentID: m.SegmentID, Base: m.BaseOffset, End: m.EndOffset, Why: why}
}

// agrees reports whether the epoch history gives the offsets of m the
// epochs m's own entries give them: the two histories, restricted to m's
// offsets, are equal. Offsets below history's first entry (a history kept
// from a later log start) are not checked.
func agrees(m tiering.Manifest, history []controlplane.EpochEntry) bool {
	lo := m.BaseOffset
	if len(history) > 0 {
		lo = max(lo, history[0].StartOffset)
	}
	if lo > m.EndOffset {
		return true
	}
	return slices.Equal(restrict(history, lo, m.EndOffset), restrict(m.SegmentEpochs, lo, m.EndOffset))
}

// restrict returns the entries of es (in offset order) in force over
// [lo, hi]: the one in force at lo, moved to lo, then those starting in
// (lo, hi].
func restrict(es []controlplane.EpochEntry, lo, hi int64) []controlplane.EpochEntry {
	var out []controlplane.EpochEntry
	for _, e := range es {
		if e.StartOffset > hi {
			break
		}
		if e.StartOffset <= lo {
			out = append(out[:0], controlplane.EpochEntry{Epoch: e.Epoch, StartOffset: lo})
			continue
		}
		out = append(out, e)
	}
	return out
}
