package chaos

import (
	"slices"
	"strings"
)

// The bucket ops' violations (issue 29).
const (
	// RestoreLost: after a topic was deleted and restored from the bucket,
	// a record that had been uploaded is missing or differs (value,
	// timestamp), or the restored end is below the uploaded end.
	RestoreLost Kind = "RESTORE-LOST"
	// QuarantineLost: a retention delete that the quarantine does not list,
	// a quarantine restore that did not bring the log start back, or
	// records of the quarantine topic missing or different at the end.
	QuarantineLost Kind = "QUARANTINE-LOST"
	// ForkMismatch: a fork's history differs from its source's records
	// below the cut (a record missing, another value or timestamp, a
	// gap), a write to the fork is missing from it, or shows in the source.
	ForkMismatch Kind = "FORK-MISMATCH"
	// ForkCopied: the bucket held objects under a fork's own keys right
	// after it was made (a fork must cost metadata, not bytes).
	ForkCopied Kind = "FORK-COPIED"
)

// checkTierOps judges the bucket ops: RESTORE-LOST, QUARANTINE-LOST,
// FORK-MISMATCH, FORK-COPIED, and STUCK for an op that could not finish.
func checkTierOps(r *Result, h *History, finals map[TP]*finalIndex) {
	t := h.TierOps
	if t == nil {
		return
	}
	setup := map[TP]*finalIndex{}
	for i := range t.Setup {
		setup[t.Setup[i].TP] = indexFinal(&t.Setup[i])
	}
	final := map[TP]*FinalRead{}
	for i := range t.Final {
		final[t.Final[i].TP] = &t.Final[i]
	}
	for _, op := range t.Restores {
		if op.Err != "" {
			r.add(Stuck, "bucket restore at %v: %s", op.At, op.Err)
		}
		if op.Report == nil || op.Report.Status != "restored" {
			continue
		}
		for _, rp := range op.Report.Partition {
			tp := TP{restoreTopic, rp.Partition}
			if up := t.Uploaded[tp.String()]; rp.NextOffset < up+1 {
				r.add(RestoreLost, "%s: the restore at %v ends at %d, below the uploaded end %d", tp, op.At, rp.NextOffset, up+1)
			}
		}
	}
	// The restore topic: from 0, every record up to its end as uploaded,
	// with its timestamp.
	for tp, s := range setup {
		if tp.Topic != restoreTopic {
			continue
		}
		checkFixed(r, RestoreLost, tp, s, final[tp], 0, t.Uploaded[tp.String()]+1)
	}
	// The quarantine topic: its log start where the last op left it (any
	// of the places an op that did not finish may have left it), and
	// every record from there.
	starts := []int64{0}
	for _, op := range t.Quarantines {
		what := "restore"
		if op.Purge {
			what = "purge"
		}
		if op.Err != "" {
			r.add(Stuck, "bucket quarantine %s at %v: %s", what, op.At, op.Err)
		}
		if op.Err == "" && op.Deleted > op.Before && op.Entries == 0 {
			r.add(QuarantineLost, "%s: retention deleted offsets %d..%d at %v and the quarantine lists nothing", quarantineTopic, op.Before, op.Deleted-1, op.At)
		}
		switch {
		case op.Skipped != "":
		case op.Err != "" && op.Deleted <= op.Before:
			// Stopped before retention moved anything, or moved it from
			// where it stood: Before, or anything retention reached.
			starts = append(starts, op.Before)
		case op.Err != "" && op.Purge:
			starts = []int64{op.Deleted} // a purge moves no log start
		case op.Err != "":
			starts = []int64{op.Before, op.Deleted} // restored or not
		case !op.Purge && op.After != op.Before:
			r.add(QuarantineLost, "%s: log start %d after the quarantine restore at %v, was %d before retention", quarantineTopic, op.After, op.At, op.Before)
			starts = []int64{op.After}
		case op.Purge && op.After != op.Deleted:
			r.add(QuarantineLost, "%s: log start %d after the purge at %v, retention had left it at %d", quarantineTopic, op.After, op.At, op.Deleted)
			starts = []int64{op.After}
		default:
			starts = []int64{op.After}
		}
	}
	for tp, s := range setup {
		if tp.Topic != quarantineTopic {
			continue
		}
		f := final[tp]
		from := starts[len(starts)-1]
		if f != nil && slices.Contains(starts, f.LogStart) {
			from = f.LogStart
		}
		checkFixed(r, QuarantineLost, tp, s, f, from, s.f.HW)
	}
	for _, op := range t.Forks {
		checkFork(r, h, op, final, finals)
	}
}

// checkFixed judges a fixed topic's final read against its setup read: log
// start from, every offset from there up to at least end, each record the
// setup's (value and timestamp), nothing past the setup's end.
func checkFixed(r *Result, k Kind, tp TP, s *finalIndex, f *FinalRead, from, end int64) {
	if f == nil {
		r.add(k, "%s: not read at the end", tp)
		return
	}
	if f.Err != "" {
		r.add(k, "%s: final read: %s", tp, f.Err)
		return
	}
	if f.LogStart != from {
		r.add(k, "%s: log start %d at the end, want %d", tp, f.LogStart, from)
	}
	if f.HW < end || f.HW > s.f.HW {
		r.add(k, "%s: high watermark %d at the end, want %d..%d", tp, f.HW, end, s.f.HW)
	}
	next := f.LogStart
	for _, rec := range f.Records {
		if rec.Offset != next {
			r.add(k, "%s: offsets %d..%d missing", tp, next, rec.Offset-1)
		}
		want, ok := s.at[rec.Offset]
		switch {
		case !ok:
			r.add(k, "%s: offset %d holds %q, which the setup did not write", tp, rec.Offset, short(rec.Value))
		case want.Value != rec.Value || want.TS != rec.TS:
			r.add(k, "%s: offset %d holds %q at %d, was %q at %d", tp, rec.Offset, short(rec.Value), rec.TS, short(want.Value), want.TS)
		}
		next = rec.Offset + 1
	}
	if next < f.HW {
		r.add(k, "%s: offsets %d..%d missing", tp, next, f.HW-1)
	}
}

// checkFork judges one fork: nothing copied, its history the source's
// below each cut, its own writes above it and not in the source.
func checkFork(r *Result, h *History, op ForkOp, final map[TP]*FinalRead, finals map[TP]*finalIndex) {
	if op.Err != "" {
		r.add(Stuck, "bucket fork %s at %v: %s", op.Name, op.At, op.Err)
	}
	if op.Report == nil {
		return
	}
	if len(op.Copied) > 0 {
		r.add(ForkCopied, "%s: %d objects under its own keys right after the fork (%s)", op.Name, len(op.Copied), op.Copied[0])
	}
	acked := map[TP]map[int64]string{}
	for _, a := range h.Acks {
		if a.Topic == forkSource {
			if acked[a.TP] == nil {
				acked[a.TP] = map[int64]string{}
			}
			acked[a.TP][a.Offset] = a.Value
		}
	}
	read := map[TP]*finalIndex{}
	for i := range op.Source {
		read[op.Source[i].TP] = indexFinal(&op.Source[i])
	}
	writes := map[TP]map[int64]string{}
	for _, w := range op.Writes {
		if writes[w.TP] == nil {
			writes[w.TP] = map[int64]string{}
		}
		writes[w.TP][w.Offset] = w.Value
	}
	prefix := op.Name + "w"
	for _, fp := range op.Report.Partitions {
		tp := TP{op.Name, fp.Partition}
		src := TP{forkSource, fp.Partition}
		f := final[tp]
		if f == nil || f.Err != "" {
			msg := "not read at the end"
			if f != nil {
				msg = f.Err
			}
			r.add(ForkMismatch, "%s: %s", tp, msg)
			continue
		}
		if f.LogStart != fp.LogStartOffset {
			r.add(ForkMismatch, "%s: log start %d at the end, the fork's was %d", tp, f.LogStart, fp.LogStartOffset)
		}
		got := map[int64]Rec{}
		for _, rec := range f.Records {
			got[rec.Offset] = rec
		}
		for o := f.LogStart; o < fp.Cut; o++ {
			rec, ok := got[o]
			if !ok {
				r.add(ForkMismatch, "%s: offset %d below the cut %d missing", tp, o, fp.Cut)
				continue
			}
			if v, ok := acked[src][o]; ok && v != rec.Value {
				r.add(ForkMismatch, "%s: offset %d holds %q, the source acknowledged %q there", tp, o, short(rec.Value), short(v))
				continue
			}
			if s := read[src]; s != nil {
				if want, ok := s.at[o]; ok && (want.Value != rec.Value || want.TS != rec.TS) {
					r.add(ForkMismatch, "%s: offset %d holds %q at %d, the source held %q at %d", tp, o, short(rec.Value), rec.TS, short(want.Value), want.TS)
				}
			}
		}
		for o, v := range writes[tp] {
			if rec, ok := got[o]; !ok || rec.Value != v {
				r.add(ForkMismatch, "%s: the write acknowledged at offset %d (%q) is not there", tp, o, v)
			}
			if o < fp.Cut {
				r.add(ForkMismatch, "%s: a write acknowledged at offset %d, below the cut %d", tp, o, fp.Cut)
			}
		}
		for _, rec := range f.Records {
			if rec.Offset >= fp.Cut && !strings.HasPrefix(rec.Value, prefix) {
				r.add(ForkMismatch, "%s: offset %d past the cut holds %q, not a write to the fork", tp, rec.Offset, short(rec.Value))
			}
		}
		if fi := finals[src]; fi != nil {
			for _, rec := range fi.f.Records {
				if strings.HasPrefix(rec.Value, prefix) {
					r.add(ForkMismatch, "%s: offset %d holds %q, a write to the fork %s", src, rec.Offset, rec.Value, op.Name)
				}
			}
		}
	}
}
