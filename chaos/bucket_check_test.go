package chaos

import (
	"slices"
	"testing"

	"github.com/shale-io/shale/adminapi"
)

// tierOpsHistory is cleanHistory with the bucket ops' record of a run with
// nothing wrong: the restore topic bak-0 (20 records, 16 uploaded) deleted
// and restored to offset 16; the quarantine topic qt-0 (10 records) whose
// retention delete up to 6 was restored, then purged; a fork of
// tiered-0 at offset 8 from log start 2, with two writes of its own.
func tierOpsHistory() *History {
	h := cleanHistory()
	fixed := func(tp TP, n int64) FinalRead {
		fr := FinalRead{TP: tp, HW: n}
		for i := range n {
			fr.Records = append(fr.Records, Rec{Offset: i, Value: Value(tp.String(), i, 0), TS: 1000 + i})
		}
		return fr
	}
	bak, qt := fixed(TP{restoreTopic, 0}, 20), fixed(TP{quarantineTopic, 0}, 10)
	src := TP{forkSource, 0}
	for i := range int64(10) {
		h.Acks = append(h.Acks, Ack{TP: src, Producer: "p1", Seq: i, Value: Value("p1", i, 0), Offset: i})
	}
	srcRead := FinalRead{TP: src, LogStart: 2, HW: 8}
	for i := int64(2); i < 8; i++ {
		srcRead.Records = append(srcRead.Records, Rec{Offset: i, Value: Value("p1", i, 0), TS: 2000 + i})
	}
	fork := FinalRead{TP: TP{"fork-1", 0}, LogStart: 2, HW: 10, Records: append([]Rec(nil), srcRead.Records...)}
	writes := []Ack{{TP: fork.TP, Producer: "fork-1", Value: Value("fork-1w0", 0, 0), Offset: 8},
		{TP: fork.TP, Producer: "fork-1", Value: Value("fork-1w0", 1, 0), Offset: 9}}
	for _, w := range writes {
		fork.Records = append(fork.Records, Rec{Offset: w.Offset, Value: w.Value})
	}
	restoredBak := bak
	restoredBak.HW, restoredBak.Records = 16, slices.Clone(bak.Records[:16])
	purgedQT := qt
	purgedQT.LogStart, purgedQT.Records = 6, slices.Clone(qt.Records[6:])
	srcFinal := FinalRead{TP: src, HW: 10}
	for i := range int64(10) {
		srcFinal.Records = append(srcFinal.Records, Rec{Offset: i, Value: Value("p1", i, 0), TS: 2000 + i})
	}
	h.Final = append(h.Final, srcFinal)
	h.TierOps = &TierOpsHistory{
		Setup:    []FinalRead{bak, qt},
		Uploaded: map[string]int64{"bak-0": 15, "qt-0": 7},
		Restores: []RestoreOp{{Attempts: 2, Killed: "node-1", Report: &adminapi.RestoredTopic{Topic: restoreTopic, Status: "restored",
			Partition: []adminapi.RestoredPartition{{Partition: 0, NextOffset: 16}}}}},
		Quarantines: []QuarantineOp{{Before: 0, Deleted: 6, After: 0, Entries: 2}, {Purge: true, Before: 0, Deleted: 6, After: 6, Entries: 2},
			{Skipped: "1 segments in the bucket after writing more: none to delete", Before: 6}},
		Forks: []ForkOp{{Name: "fork-1", AtOffset: 8, Report: &adminapi.ForkReport{Topic: "fork-1", Source: forkSource,
			Partitions: []adminapi.ForkedPartition{{Partition: 0, Cut: 8, LogStartOffset: 2}}}, Source: []FinalRead{srcRead}, Writes: writes},
			{Name: "fork-2", Refused: "409 Conflict: past the uploaded end"}},
		Final: []FinalRead{restoredBak, purgedQT, fork},
	}
	return h
}

func TestCheckTierOpsClean(t *testing.T) {
	if r := Check(tierOpsHistory()); r.Total() != 0 {
		t.Fatalf("a clean history has violations: %v", r.Violations)
	}
}

// TestCheckTierOpsFindsEachKind breaks the clean bucket ops' record one way
// per case and wants that kind reported.
func TestCheckTierOpsFindsEachKind(t *testing.T) {
	final := func(h *History, topic string) *FinalRead {
		for i := range h.TierOps.Final {
			if h.TierOps.Final[i].Topic == topic {
				return &h.TierOps.Final[i]
			}
		}
		t.Fatalf("no final read of %s", topic)
		return nil
	}
	for _, tc := range []struct {
		name   string
		kind   Kind
		break_ func(h *History)
	}{
		{"restore ends below the upload", RestoreLost, func(h *History) { h.TierOps.Restores[0].Report.Partition[0].NextOffset = 15 }},
		{"restored record lost", RestoreLost, func(h *History) {
			f := final(h, restoreTopic)
			f.Records = append(f.Records[:3:3], f.Records[4:]...)
		}},
		{"restored timestamp differs", RestoreLost, func(h *History) { final(h, restoreTopic).Records[5].TS = 1 }},
		{"restored topic ends short", RestoreLost, func(h *History) {
			f := final(h, restoreTopic)
			f.HW, f.Records = 15, f.Records[:15]
		}},
		{"restored topic unreadable", RestoreLost, func(h *History) { final(h, restoreTopic).Err = "deadline" }},
		{"retention delete not quarantined", QuarantineLost, func(h *History) { h.TierOps.Quarantines[0].Entries = 0 }},
		{"quarantine restore did not bring the log start back", QuarantineLost, func(h *History) { h.TierOps.Quarantines[0].After = 6 }},
		{"purge moved the log start", QuarantineLost, func(h *History) { h.TierOps.Quarantines[1].After = 7 }},
		{"quarantine topic's log start past the purge", QuarantineLost, func(h *History) {
			f := final(h, quarantineTopic)
			f.LogStart, f.Records = 7, f.Records[1:]
		}},
		{"quarantine topic's record differs", QuarantineLost, func(h *History) { final(h, quarantineTopic).Records[0].Value = "x" }},
		{"fork copied objects", ForkCopied, func(h *History) { h.TierOps.Forks[0].Copied = []string{"k/fork-1-00/0/a.log"} }},
		{"fork record missing", ForkMismatch, func(h *History) {
			f := final(h, "fork-1")
			f.Records = append(f.Records[:1:1], f.Records[2:]...)
		}},
		{"fork value differs from the source's ack", ForkMismatch, func(h *History) { final(h, "fork-1").Records[0].Value = Value("p9", 2, 0) }},
		{"fork timestamp differs", ForkMismatch, func(h *History) { final(h, "fork-1").Records[1].TS = 5 }},
		{"fork write lost", ForkMismatch, func(h *History) {
			f := final(h, "fork-1")
			f.Records = f.Records[:len(f.Records)-1]
		}},
		{"fork write shows in the source", ForkMismatch, func(h *History) {
			f := &h.Final[len(h.Final)-1]
			f.HW, f.Records = 11, append(f.Records, Rec{Offset: 10, Value: Value("fork-1w0", 1, 0)})
		}},
		{"fork log start moved", ForkMismatch, func(h *History) {
			f := final(h, "fork-1")
			f.LogStart, f.Records = 3, f.Records[1:]
		}},
		{"op that did not finish", Stuck, func(h *History) { h.TierOps.Restores[0].Err = "restore of bak after 9 attempts: refused" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tierOpsHistory()
			tc.break_(h)
			r := Check(h)
			if r.Counts[tc.kind] == 0 {
				t.Fatalf("want %s, got %v", tc.kind, r.Violations)
			}
			for k, n := range r.Counts {
				if k != tc.kind && n > 0 {
					t.Errorf("also %s: %v", k, r.Violations)
				}
			}
		})
	}
}

// TestCheckTierOpsOpCutShort: a quarantine purge that did not finish
// leaves the log start where retention put it; a restore that did not
// finish, where it was or where retention put it. Each is STUCK, and the
// quarantine topic is judged from either place, not QUARANTINE-LOST.
func TestCheckTierOpsOpCutShort(t *testing.T) {
	for _, tc := range []struct {
		name  string
		op    QuarantineOp
		start int64
	}{
		{"purge", QuarantineOp{Purge: true, Before: 0, Deleted: 6, After: -1, Entries: 2, Err: "cut"}, 6},
		{"restore not done", QuarantineOp{Before: 0, Deleted: 6, After: -1, Entries: 2, Err: "cut"}, 6},
		{"restore done", QuarantineOp{Before: 0, Deleted: 6, After: -1, Entries: 2, Err: "cut"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tierOpsHistory()
			h.TierOps.Quarantines = []QuarantineOp{tc.op}
			for i := range h.TierOps.Final {
				if f := &h.TierOps.Final[i]; f.Topic == quarantineTopic {
					f.LogStart, f.Records = tc.start, slices.Clone(h.TierOps.Setup[1].Records[tc.start:])
				}
			}
			r := Check(h)
			if r.Counts[Stuck] != 1 || r.Total() != 1 {
				t.Fatalf("want the one STUCK, got %v", r.Violations)
			}
		})
	}
	// From elsewhere it is lost.
	h := tierOpsHistory()
	h.TierOps.Quarantines = []QuarantineOp{{Purge: true, Before: 0, Deleted: 6, After: -1, Entries: 2, Err: "cut"}}
	for i := range h.TierOps.Final {
		if f := &h.TierOps.Final[i]; f.Topic == quarantineTopic {
			f.LogStart, f.Records = 7, slices.Clone(h.TierOps.Setup[1].Records[7:])
		}
	}
	if r := Check(h); r.Counts[QuarantineLost] == 0 {
		t.Fatalf("log start 7 after a purge that retention left at 6: want QUARANTINE-LOST, got %v", r.Violations)
	}
}
