package tiering

import (
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/segment"
)

// OrphanCopies returns the CopyFinished remote segments outside the
// leader-epoch lineage of the local log (epochs: a copy an older leader
// uploaded of records the current log replaced, such as a divergent tail
// truncated after an unclean election) whose every offset another
// CopyFinished segment of the lineage holds: they are read by no one that
// follows the lineage, and deleting them loses no retained offset. A copy
// outside the lineage that the lineage's copies do not yet cover waits
// (its offsets above the local log's uploads are judged once those are
// uploaded), as does one starting below the local history's first entry
// (the history cannot judge it) or one with no epochs recorded. In offset
// order.
func OrphanCopies(remote []controlplane.RemoteSegment, epochs []segment.EpochEntry) []controlplane.RemoteSegment {
	if len(epochs) == 0 {
		return nil
	}
	var out []controlplane.RemoteSegment
	orphan := map[string]bool{}
	for _, r := range remote {
		if r.State != controlplane.CopyFinished || len(r.SegmentEpochs) == 0 || r.BaseOffset < epochs[0].StartOffset ||
			SameLineage(epochs, r.SegmentEpochs, r.BaseOffset, r.EndOffset) {
			continue
		}
		var others []controlplane.RemoteSegment
		for _, o := range remote {
			if o.SegmentID != r.SegmentID && !orphan[o.SegmentID] {
				others = append(others, o)
			}
		}
		if Covered(others, r.BaseOffset, r.EndOffset, epochs) {
			orphan[r.SegmentID] = true
			out = append(out, r)
		}
	}
	return out
}
