package restore

import (
	"fmt"
	"slices"
	"testing"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/tiering"
)

func seg(id string, base, end int64, epochs ...int64) tiering.Manifest {
	m := tiering.Manifest{SegmentID: id, BaseOffset: base, EndOffset: end}
	for i := 0; i+1 < len(epochs); i += 2 {
		m.SegmentEpochs = append(m.SegmentEpochs, controlplane.EpochEntry{Epoch: int32(epochs[i]), StartOffset: epochs[i+1]})
		m.LeaderEpoch = max(m.LeaderEpoch, int32(epochs[i]))
	}
	return m
}

func hist(es ...int64) []controlplane.EpochEntry {
	var out []controlplane.EpochEntry
	for i := 0; i+1 < len(es); i += 2 {
		out = append(out, controlplane.EpochEntry{Epoch: int32(es[i]), StartOffset: es[i+1]})
	}
	return out
}

// TestPlanPartition tables the chain a restore takes from a partition's
// uploads.
func TestPlanPartition(t *testing.T) {
	for _, tc := range []struct {
		name      string
		segs      []tiering.Manifest
		history   []controlplane.EpochEntry
		chain     []string
		gaps      []OffsetRange
		skipped   []string
		start     int64
		next      int64
		leadEpoch int32
	}{
		{name: "contiguous", segs: []tiering.Manifest{seg("b", 100, 199, 0, 0), seg("a", 0, 99, 0, 0)},
			history: hist(0, 0), chain: []string{"a", "b"}, next: 200, leadEpoch: 1},
		{name: "a leader change inside a segment", segs: []tiering.Manifest{seg("a", 0, 99, 0, 0, 1, 50), seg("b", 100, 149, 1, 50)},
			history: hist(0, 0, 1, 50), chain: []string{"a", "b"}, next: 150, leadEpoch: 2},
		{name: "an old leader's copy of a replaced tail", // epoch 1 wrote 150..199, epoch 2 replaced it from 150
			segs:    []tiering.Manifest{seg("a", 0, 149, 1, 0), seg("old", 150, 199, 1, 0), seg("new", 150, 249, 1, 0, 2, 150)},
			history: hist(1, 0, 2, 150), chain: []string{"a", "new"}, skipped: []string{"old"}, next: 250, leadEpoch: 3},
		{name: "overlapping copies after a leader change",
			segs:    []tiering.Manifest{seg("a", 0, 99, 0, 0), seg("b", 50, 149, 0, 0, 1, 120), seg("c", 60, 100, 0, 0)},
			history: hist(0, 0, 1, 120), chain: []string{"a", "b"}, skipped: []string{"c"}, next: 150, leadEpoch: 2},
		{name: "a deleted segment leaves a gap", segs: []tiering.Manifest{seg("a", 0, 99, 0, 0), seg("c", 200, 299, 0, 0)},
			history: hist(0, 0), chain: []string{"a", "c"}, gaps: []OffsetRange{{100, 199}}, next: 300, leadEpoch: 1},
		{name: "retention moved the start", segs: []tiering.Manifest{seg("c", 500, 599, 3, 400)},
			history: hist(3, 500), chain: []string{"c"}, start: 500, next: 600, leadEpoch: 4},
		{name: "no history: every copy counts", segs: []tiering.Manifest{seg("a", 0, 99, 1, 0), seg("b", 0, 120, 2, 0)},
			chain: []string{"b"}, skipped: []string{"a"}, next: 121, leadEpoch: 3},
		{name: "nothing uploaded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanPartition(tc.segs, tc.history)
			var chain, skipped []string
			for _, m := range p.Segments {
				chain = append(chain, m.SegmentID)
			}
			for _, s := range p.Skipped {
				skipped = append(skipped, s.SegmentID)
			}
			slices.Sort(skipped)
			if !slices.Equal(chain, tc.chain) || !slices.Equal(skipped, tc.skipped) || !slices.Equal(p.Gaps, tc.gaps) {
				t.Fatalf("chain %v skipped %v gaps %v, want %v %v %v", chain, skipped, p.Gaps, tc.chain, tc.skipped, tc.gaps)
			}
			if p.LogStart != tc.start || p.NextOffset != tc.next || leadEpoch(p) != tc.leadEpoch {
				t.Fatalf("start %d next %d lead epoch %d, want %d %d %d", p.LogStart, p.NextOffset, leadEpoch(p), tc.start, tc.next, tc.leadEpoch)
			}
		})
	}
}

func TestNotUploaded(t *testing.T) {
	for _, tc := range []struct{ hw, next, want int64 }{{0, 10, -1}, {10, 10, 0}, {25, 10, 15}, {5, 10, 0}} {
		if got := (PartitionPlan{HighWatermark: tc.hw, NextOffset: tc.next}).NotUploaded(); got != tc.want {
			t.Errorf("%s: %d, want %d", fmt.Sprint(tc), got, tc.want)
		}
	}
}
