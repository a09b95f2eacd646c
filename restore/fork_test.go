package restore

import (
	"testing"

	"github.com/shale-io/shale/controlplane"
)

// TestForkChain: the chain a fork lists starts at the lowest finished
// segment, takes the higher leader epoch where uploads overlap, skips
// unfinished records, and stops at the first offset no segment holds.
func TestForkChain(t *testing.T) {
	seg := func(id string, base, end int64, epoch int32, st controlplane.RemoteSegmentState) controlplane.RemoteSegment {
		return controlplane.RemoteSegment{SegmentID: id, BaseOffset: base, EndOffset: end, LeaderEpoch: epoch, State: st}
	}
	fin := controlplane.CopyFinished
	for _, c := range []struct {
		name string
		segs []controlplane.RemoteSegment
		end  int64
		ids  []string
		next int64
	}{
		{"none", nil, 10, nil, 0},
		{"contiguous", []controlplane.RemoteSegment{seg("a", 0, 9, 0, fin), seg("b", 10, 19, 0, fin)}, 19, []string{"a", "b"}, 20},
		{"stops at end", []controlplane.RemoteSegment{seg("a", 0, 9, 0, fin), seg("b", 10, 19, 0, fin)}, 5, []string{"a"}, 10},
		{"higher epoch wins", []controlplane.RemoteSegment{seg("a", 0, 9, 0, fin), seg("b", 10, 19, 0, fin), seg("c", 10, 14, 1, fin),
			seg("d", 15, 30, 1, fin)}, 30, []string{"a", "c", "d"}, 31},
		{"unfinished is a gap", []controlplane.RemoteSegment{seg("a", 0, 9, 0, fin), seg("b", 10, 19, 0, controlplane.CopyStarted),
			seg("c", 20, 29, 0, fin)}, 29, []string{"a"}, 10},
		{"starts at the lowest finished", []controlplane.RemoteSegment{seg("x", 0, 9, 0, controlplane.DeleteStarted),
			seg("a", 10, 19, 0, fin)}, 19, []string{"a"}, 20},
	} {
		chain, next := ForkChain(c.segs, c.end)
		var ids []string
		for _, s := range chain {
			ids = append(ids, s.SegmentID)
		}
		if next != c.next || len(ids) != len(c.ids) {
			t.Errorf("%s: chain %v next %d, want %v next %d", c.name, ids, next, c.ids, c.next)
			continue
		}
		for i := range ids {
			if ids[i] != c.ids[i] {
				t.Errorf("%s: chain %v, want %v", c.name, ids, c.ids)
			}
		}
	}
}
