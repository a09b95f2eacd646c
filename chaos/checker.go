package chaos

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// Kind is a kind of violation the checker reports.
type Kind string

// The violations, as docs/reliability.md defines them.
const (
	// Lost: an acknowledged record is missing from the final read, or
	// another value is at its offset.
	Lost Kind = "LOST"
	// Duplicate: one value at two offsets.
	Duplicate Kind = "DUPLICATE"
	// Inconsistent: a value seen during the run differs from the final
	// read at that offset (or lies above the final high watermark).
	Inconsistent Kind = "INCONSISTENT"
	// Reorder: a producer's sequence out of order within a partition.
	Reorder Kind = "REORDER"
	// Gap: missing offsets in the final read of a topic that is not
	// compacted.
	Gap Kind = "GAP"
	// Undeleted: records an acknowledged DeleteRecords removed are back:
	// the final read's log start lies below the low watermark answered.
	Undeleted Kind = "UNDELETED"
	// OffsetRegression: a group's committed offset going backwards.
	OffsetRegression Kind = "OFFSET-REGRESSION"
	// Stuck: the heal did not finish within its bound, a producer or
	// consumer did not resume within its bound after it, or the final read
	// could not reach the high watermark.
	Stuck Kind = "STUCK"
	// ReplicaDivergence: replicas' local logs differ below the high
	// watermark.
	ReplicaDivergence Kind = "REPLICA-DIVERGENCE"
	// Orphans: objects in the bucket that no committed metadata references,
	// older than the reconciler's grace.
	Orphans Kind = "ORPHANS"
	// AbortedRead: a read_committed read shows a record of a transaction
	// that was not committed (the transactional workload's output of an
	// input whose offset the group never committed).
	AbortedRead Kind = "ABORTED-READ"
	// LSOStuck: after the transactional workload stopped (and its open
	// transaction's timeout passed), a partition it or the adversarial
	// producer wrote to has its last stable offset below its high
	// watermark: a transaction that no coordinator ends.
	LSOStuck Kind = "LSO-STUCK"
	// AdversaryAccepted: a node acknowledged one of the adversarial
	// producer's requests (a transactional batch without a transactional
	// id, at a stale epoch, a TxnOffsetCommit of a made-up producer id).
	AdversaryAccepted Kind = "ADVERSARY-ACCEPTED"
	// ShareUnaccepted: a record acknowledged to its producer that no share
	// group member accepted by the end of the run (the share group
	// workload).
	ShareUnaccepted Kind = "SHARE-UNACCEPTED"
	// ShareRedelivered: a share group member got a record again after a
	// member's acceptance of it was confirmed (a later acquisition: a
	// higher delivery count).
	ShareRedelivered Kind = "SHARE-REDELIVERED"
)

// Kinds lists every Kind in the order verdicts print them.
var Kinds = []Kind{Lost, Duplicate, Inconsistent, Reorder, Gap, Undeleted, OffsetRegression, Stuck, ReplicaDivergence, Orphans, AbortedRead,
	LSOStuck, AdversaryAccepted, ShareUnaccepted, ShareRedelivered, RestoreLost, QuarantineLost, ForkMismatch, ForkCopied}

// Violation is one finding of the checker.
type Violation struct {
	Kind   Kind   `json:"kind"`
	Detail string `json:"detail"`
}

func (v Violation) String() string { return string(v.Kind) + ": " + v.Detail }

// Result is what Check found: every violation counted by kind, and the
// first MaxDetails of each kind described.
type Result struct {
	Counts     map[Kind]int `json:"counts"`
	Violations []Violation  `json:"violations"`
	// LeaderAcksLost counts records acknowledged with acks=1 that the final
	// read does not hold: allowed by acks=1, so not a violation, but how
	// much a failover cost such a producer.
	LeaderAcksLost int `json:"leader_acks_lost"`
}

// MaxDetails bounds the violations of one kind that a Result describes.
const MaxDetails = 20

// Total is the number of violations of every kind.
func (r Result) Total() int {
	n := 0
	for _, c := range r.Counts {
		n += c
	}
	return n
}

func (r *Result) add(k Kind, format string, args ...any) {
	if r.Counts == nil {
		r.Counts = map[Kind]int{}
	}
	r.Counts[k]++
	if r.Counts[k] <= MaxDetails {
		r.Violations = append(r.Violations, Violation{Kind: k, Detail: fmt.Sprintf(format, args...)})
	}
}

// Check judges a history. It is a pure function of h.
func Check(h *History) Result {
	r := Result{Counts: map[Kind]int{}}
	compacted := map[string]bool{}
	for _, t := range h.Compacted {
		compacted[t] = true
	}
	weak := map[string]bool{}
	for _, t := range h.LeaderAcks {
		weak[t] = true
	}
	finals := map[TP]*finalIndex{}
	for i := range h.Final {
		f := &h.Final[i]
		finals[f.TP] = indexFinal(f)
	}
	trimmed := checkTrims(&r, h, finals)
	checkFinal(&r, h, compacted, weak)
	checkAcks(&r, h, finals, compacted, weak, trimmed)
	checkReads(&r, h, finals, compacted, weak)
	checkCommits(&r, h)
	checkStuck(&r, h)
	checkReplicas(&r, h)
	checkOrphans(&r, h)
	checkETL(&r, h, finals)
	checkShare(&r, h, finals)
	checkTierOps(&r, h, finals)
	return r
}

// finalIndex is one partition's final read, by offset.
type finalIndex struct {
	f       *FinalRead
	at      map[int64]Rec
	reached int64 // offsets below it were read (HW, or less after an error)
}

func indexFinal(f *FinalRead) *finalIndex {
	fi := &finalIndex{f: f, at: make(map[int64]Rec, len(f.Records)), reached: f.HW}
	for _, rec := range f.Records {
		fi.at[rec.Offset] = rec
	}
	if f.Err != "" {
		fi.reached = f.LogStart
		if n := len(f.Records); n > 0 {
			fi.reached = f.Records[n-1].Offset + 1
		}
	}
	return fi
}

// checkFinal: GAP, DUPLICATE and REORDER within the final reads (only GAP
// on acks=1 topics, where a retry may write a record twice).
func checkFinal(r *Result, h *History, compacted, weak map[string]bool) {
	type place struct {
		tp     TP
		offset int64
	}
	seen := map[string]place{}
	for _, f := range h.Final {
		if f.Err != "" {
			r.add(Stuck, "%s: final read stopped: %s", f.TP, f.Err)
		}
		next := f.LogStart
		lastSeq := map[string]int64{}
		lastOff := map[string]int64{}
		for _, rec := range f.Records {
			if !compacted[f.Topic] && rec.Offset != next {
				if rec.Offset > next {
					r.add(Gap, "%s: offsets %d..%d missing from the final read", f.TP, next, rec.Offset-1)
				} else {
					r.add(Gap, "%s: offset %d read again after %d", f.TP, rec.Offset, next-1)
				}
			}
			next = rec.Offset + 1
			if weak[f.Topic] {
				continue
			}
			if p, dup := seen[rec.Value]; dup {
				r.add(Duplicate, "value %q at %s offset %d and %s offset %d", short(rec.Value), p.tp, p.offset, f.TP, rec.Offset)
			} else {
				seen[rec.Value] = place{f.TP, rec.Offset}
			}
			if prod, seq, ok := ParseValue(rec.Value); ok {
				if prev, ok := lastSeq[prod]; ok && seq <= prev {
					r.add(Reorder, "%s: producer %s's record %d at offset %d after its record %d at offset %d", f.TP, prod, seq, rec.Offset, prev, lastOff[prod])
				}
				lastSeq[prod], lastOff[prod] = seq, rec.Offset
			}
		}
		if !compacted[f.Topic] && f.Err == "" && next < f.HW {
			r.add(Gap, "%s: offsets %d..%d missing below the high watermark", f.TP, next, f.HW-1)
		}
	}
}

// checkTrims: UNDELETED, against each partition's highest acknowledged low
// watermark. It returns each partition's highest offset any DeleteRecords
// asked for (acknowledged or not): an acknowledged record below both it and
// the final log start was deleted on purpose.
func checkTrims(r *Result, h *History, finals map[TP]*finalIndex) map[TP]int64 {
	asked, acked := map[TP]int64{}, map[TP]int64{}
	for _, t := range h.Trims {
		asked[t.TP] = max(asked[t.TP], t.Offset)
		if t.Acked {
			acked[t.TP] = max(acked[t.TP], t.LowWatermark)
		}
	}
	for tp, low := range acked {
		if fi := finals[tp]; fi != nil && fi.f.Err == "" && fi.f.LogStart < low {
			r.add(Undeleted, "%s: DeleteRecords answered low watermark %d, the final read starts at %d", tp, low, fi.f.LogStart)
		}
	}
	return asked
}

// checkAcks: LOST (counted apart, not as a violation, on acks=1 topics).
// Records a DeleteRecords asked to delete, and gone, are not judged.
func checkAcks(r *Result, h *History, finals map[TP]*finalIndex, compacted, weak map[string]bool, trimmed map[TP]int64) {
	// On a compacted topic only the latest acknowledged record of each key
	// must survive, as itself or as a later record of the same key.
	type keyed struct {
		tp  TP
		key string
	}
	latest := map[keyed]Ack{}
	for _, a := range h.Acks {
		fi, ok := finals[a.TP]
		if !ok {
			r.add(Stuck, "%s: no final read for acknowledged records", a.TP)
			finals[a.TP] = nil
			continue
		}
		if fi == nil || a.Offset < trimmed[a.TP] && a.Offset < fi.f.LogStart {
			continue
		}
		if weak[a.Topic] {
			if rec, ok := fi.at[a.Offset]; !ok || rec.Value != a.Value {
				if fi.f.Err == "" || a.Offset < fi.reached {
					r.LeaderAcksLost++
				}
			}
			continue
		}
		if compacted[a.Topic] {
			k := keyed{a.TP, a.Key}
			if prev, ok := latest[k]; !ok || a.Offset > prev.Offset {
				latest[k] = a
			}
			continue
		}
		checkAck(r, fi, a)
	}
	keys := make([]keyed, 0, len(latest))
	for k := range latest {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return latest[keys[i]].At < latest[keys[j]].At })
	for _, k := range keys {
		a := latest[k]
		fi := finals[a.TP]
		if a.Offset >= fi.reached && fi.f.Err != "" {
			continue // STUCK already
		}
		if rec, ok := fi.at[a.Offset]; ok {
			if rec.Value != a.Value {
				r.add(Lost, "%s: acknowledged %q (key %s) at offset %d, read %q there", a.TP, short(a.Value), a.Key, a.Offset, short(rec.Value))
			}
			continue
		}
		later := false
		for _, rec := range fi.f.Records {
			if rec.Offset > a.Offset && rec.Key == a.Key {
				later = true
				break
			}
		}
		if !later {
			r.add(Lost, "%s: key %s has no record at or after its acknowledged offset %d (%q)", a.TP, a.Key, a.Offset, short(a.Value))
		}
	}
}

func checkAck(r *Result, fi *finalIndex, a Ack) {
	if fi.f.Err != "" && a.Offset >= fi.reached {
		return // STUCK already
	}
	rec, ok := fi.at[a.Offset]
	switch {
	case ok && rec.Value == a.Value:
	case ok:
		r.add(Lost, "%s: acknowledged %q at offset %d, read %q there", a.TP, short(a.Value), a.Offset, short(rec.Value))
	case a.Offset >= fi.f.HW:
		r.add(Lost, "%s: acknowledged %q at offset %d, above the final high watermark %d", a.TP, short(a.Value), a.Offset, fi.f.HW)
	case a.Offset < fi.f.LogStart:
		r.add(Lost, "%s: acknowledged %q at offset %d, below the final log start %d", a.TP, short(a.Value), a.Offset, fi.f.LogStart)
	default:
		r.add(Lost, "%s: acknowledged %q at offset %d, missing from the final read", a.TP, short(a.Value), a.Offset)
	}
}

// checkReads: INCONSISTENT, and DUPLICATE among the values consumers saw
// (not on acks=1 topics, where the log itself may hold a record twice).
func checkReads(r *Result, h *History, finals map[TP]*finalIndex, compacted, weak map[string]bool) {
	type place struct {
		tp     TP
		offset int64
	}
	byValue := map[string]place{}
	byOffset := map[place]string{}
	for _, rd := range h.Reads {
		p := place{rd.TP, rd.Offset}
		if v, ok := byOffset[p]; ok && v != rd.Value {
			r.add(Inconsistent, "%s offset %d: %s read %q, %q was read there before", rd.TP, rd.Offset, rd.Consumer, short(rd.Value), short(v))
			continue
		}
		byOffset[p] = rd.Value
		if q, ok := byValue[rd.Value]; ok && q != p && !weak[rd.Topic] {
			r.add(Duplicate, "value %q read at %s offset %d and %s offset %d", short(rd.Value), q.tp, q.offset, rd.TP, rd.Offset)
		} else {
			byValue[rd.Value] = p
		}
		fi := finals[rd.TP]
		if fi == nil || rd.Offset < fi.f.LogStart || rd.Offset >= fi.reached && fi.f.Err != "" {
			continue
		}
		rec, ok := fi.at[rd.Offset]
		switch {
		case ok && rec.Value != rd.Value:
			r.add(Inconsistent, "%s offset %d: %s read %q during the run, the final read has %q", rd.TP, rd.Offset, rd.Consumer, short(rd.Value), short(rec.Value))
		case !ok && rd.Offset >= fi.f.HW:
			r.add(Inconsistent, "%s offset %d: %s read %q during the run, above the final high watermark %d", rd.TP, rd.Offset, rd.Consumer, short(rd.Value), fi.f.HW)
		case !ok && !compacted[rd.Topic]:
			r.add(Inconsistent, "%s offset %d: %s read %q during the run, missing from the final read", rd.TP, rd.Offset, rd.Consumer, short(rd.Value))
		}
	}
}

// checkCommits: OFFSET-REGRESSION. An OffsetFetch sent after an
// observation was answered (a commit acknowledged, an earlier OffsetFetch
// answered) must not return less, and a group member made after it must
// not resume from less (Source "resume": its first offset read). Commits themselves are the client's
// choice and are not judged, and two observations in flight at once are
// not ordered.
func checkCommits(r *Result, h *History) {
	type gtp struct {
		group string
		tp    TP
	}
	by := map[gtp][]Commit{}
	var keys []gtp
	for _, c := range h.Commit {
		k := gtp{c.Group, c.TP}
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], c)
	}
	logStart := map[TP]int64{}
	for _, f := range h.Final {
		logStart[f.TP] = f.LogStart
	}
	for _, k := range keys {
		answered := slices.Clone(by[k])
		sort.SliceStable(answered, func(i, j int) bool { return answered[i].At < answered[j].At })
		// best[i]: the largest observation among answered[:i+1]
		best := make([]Commit, len(answered))
		for i, c := range answered {
			best[i] = c
			if i > 0 && best[i-1].Offset >= c.Offset {
				best[i] = best[i-1]
			}
		}
		for _, f := range by[k] {
			if f.Source != "fetch" && f.Source != "resume" {
				continue
			}
			n := sort.Search(len(answered), func(i int) bool { return answered[i].At >= f.Sent })
			if n == 0 {
				continue
			}
			b := best[n-1]
			if f.Offset == -1 && b.Source == "resume" && b.Offset <= logStart[k.tp] {
				// No committed offset, and a member that found none resumed
				// from the log start: the same position, not a regression.
				continue
			}
			if b.Offset > f.Offset {
				what := "OffsetFetch sent at %v answered %d"
				if f.Source == "resume" {
					what = "a member made at %v resumed from %d"
				}
				r.add(OffsetRegression, "group %s %s: "+what+", after %s %d answered at %v",
					k.group, k.tp, f.Sent.Round(time.Millisecond), f.Offset, b.Source, b.Offset, b.At.Round(time.Millisecond))
			}
		}
	}
}

// checkStuck: STUCK for the heal and each actor.
func checkStuck(r *Result, h *History) {
	if h.HealErr != "" {
		r.add(Stuck, "heal: %s", h.HealErr)
	}
	for _, a := range h.Actors {
		switch {
		case a.ResumedAt == 0:
			r.add(Stuck, "%s %s made no progress after the heal", a.Kind, a.Name)
		case a.ResumedAt-h.HealEnd > h.ResumeBound:
			r.add(Stuck, "%s %s resumed %v after the heal (bound %v)", a.Kind, a.Name, (a.ResumedAt - h.HealEnd).Round(time.Millisecond), h.ResumeBound)
		}
	}
}

// checkReplicas: REPLICA-DIVERGENCE. Each pair of replicas of a partition
// must hold the same batches where both hold them, below both bounds.
func checkReplicas(r *Result, h *History) {
	by := map[TP][]ReplicaLog{}
	var tps []TP
	for _, rl := range h.Replicas {
		if _, ok := by[rl.TP]; !ok {
			tps = append(tps, rl.TP)
		}
		by[rl.TP] = append(by[rl.TP], rl)
	}
	for _, tp := range tps {
		rs := by[tp]
		for i := range rs {
			for j := i + 1; j < len(rs); j++ {
				if d := diverge(rs[i], rs[j]); d != "" {
					r.add(ReplicaDivergence, "%s: nodes %d and %d: %s", tp, rs[i].Node, rs[j].Node, d)
				}
			}
		}
	}
}

// diverge describes the first difference between two replicas' batches in
// the range both hold, or returns "".
func diverge(a, b ReplicaLog) string {
	bound := min(a.Bound, b.Bound)
	below := func(bs []BatchSig) []BatchSig {
		n := 0
		for n < len(bs) && bs[n].Last < bound {
			n++
		}
		return bs[:n]
	}
	x, y := below(a.Batches), below(b.Batches)
	if len(x) == 0 || len(y) == 0 {
		return ""
	}
	lo := max(x[0].Base, y[0].Base)
	from := func(bs []BatchSig) []BatchSig {
		i := 0
		for i < len(bs) && bs[i].Base < lo {
			i++
		}
		return bs[i:]
	}
	// A replica whose first batch starts inside the other's batch: cut
	// both at the first base they share.
	x, y = from(x), from(y)
	for len(x) > 0 && len(y) > 0 && x[0].Base != y[0].Base {
		if x[0].Base < y[0].Base {
			x = x[1:]
		} else {
			y = y[1:]
		}
	}
	for k := 0; k < len(x) && k < len(y); k++ {
		if x[k] != y[k] {
			return fmt.Sprintf("batch at offset %d: [%d,%d] hash %08x vs batch at %d: [%d,%d] hash %08x (below %d)",
				x[k].Base, x[k].Base, x[k].Last, x[k].Hash, y[k].Base, y[k].Base, y[k].Last, y[k].Hash, bound)
		}
	}
	if len(x) != len(y) {
		end := func(bs []BatchSig) int64 {
			if len(bs) == 0 {
				return lo
			}
			return bs[len(bs)-1].Last + 1
		}
		return fmt.Sprintf("one holds offsets up to %d, the other up to %d (below %d)", end(x), end(y), bound)
	}
	return ""
}

// checkOrphans: ORPHANS.
func checkOrphans(r *Result, h *History) {
	if h.Bucket == nil {
		return
	}
	ref := map[string]bool{}
	for _, k := range h.Referenced {
		ref[k] = true
	}
	for _, o := range h.Bucket {
		if !ref[o.Key] && o.Age > h.OrphanGrace {
			r.add(Orphans, "%s: no metadata references it, %v old (grace %v)", o.Key, o.Age.Round(time.Second), h.OrphanGrace)
		}
	}
}

// short cuts a value's filler for messages.
func short(v string) string {
	if len(v) > 32 {
		return v[:32] + "…"
	}
	return v
}

// checkETL: the transactional workload's exactly-once (DUPLICATE, LOST,
// INCONSISTENT, ABORTED-READ, STUCK). Every input record below the group's
// committed offset has its output once in the read_committed read, and no
// output shows an input the group has not committed: its transaction was
// aborted (or its offsets and its output were not committed atomically).
// Beside it, no request of the adversarial producer was acknowledged
// (ADVERSARY-ACCEPTED) and every partition reached a last stable offset
// equal to its high watermark (LSO-STUCK).
func checkETL(r *Result, h *History, finals map[TP]*finalIndex) {
	e := h.ETL
	if e == nil {
		return
	}
	if a := e.Adversary; a != nil {
		for i := range a.AcceptedTotal {
			what := "(detail dropped)"
			if i < len(a.Accepted) {
				what = a.Accepted[i]
			}
			r.add(AdversaryAccepted, "%s", what)
		}
	}
	for _, s := range e.Stable {
		switch {
		case s.Err != "":
			r.add(LSOStuck, "%s: last stable offset not known after the run: %s", s.TP, s.Err)
		case s.LSO != s.HW:
			r.add(LSOStuck, "%s: last stable offset %d below the high watermark %d after the run", s.TP, s.LSO, s.HW)
		}
	}
	if e.Err != "" {
		r.add(Stuck, "etl: %s", e.Err)
	}
	if !e.Drained {
		r.add(Stuck, "etl: the group's commits did not reach the input's end (committed %v)", e.Committed)
	}
	type in struct {
		p   int32
		off int64
	}
	seen := map[in]int64{} // input → output offset
	for _, f := range e.Outputs {
		if f.Err != "" {
			r.add(Stuck, "%s: read_committed read stopped: %s", f.TP, f.Err)
		}
		for _, rec := range f.Records {
			p, off, v, ok := ParseETLValue(rec.Value)
			if !ok {
				r.add(Inconsistent, "%s offset %d: %q is not a value the workload wrote", f.TP, rec.Offset, short(rec.Value))
				continue
			}
			k := in{p, off}
			if prev, dup := seen[k]; dup {
				r.add(Duplicate, "%s: input %s-%d offset %d written twice (offsets %d and %d) read_committed", f.TP, e.Input, p, off, prev, rec.Offset)
				continue
			}
			seen[k] = rec.Offset
			if c, ok := e.Committed[p]; !ok || off >= c {
				r.add(AbortedRead, "%s offset %d: output of input %s-%d offset %d visible read_committed, but the group committed only up to %d",
					f.TP, rec.Offset, e.Input, p, off, c)
			}
			if fi := finals[TP{e.Input, p}]; fi != nil {
				if got, ok := fi.at[off]; ok && got.Value != v {
					r.add(Inconsistent, "%s offset %d: carries input %s-%d offset %d %q, the input there is %q", f.TP, rec.Offset, e.Input, p, off, short(v), short(got.Value))
				}
			}
		}
	}
	for _, f := range h.Final {
		if f.Topic != e.Input {
			continue
		}
		c := e.Committed[f.Partition]
		for _, rec := range f.Records {
			if rec.Offset >= c {
				break
			}
			if _, ok := seen[in{f.Partition, rec.Offset}]; !ok {
				r.add(Lost, "%s offset %d: consumed and committed by the transactional group, but its output is missing read_committed", f.TP, rec.Offset)
			}
		}
	}
}

// checkShare: the share group workload's promises (SHARE-UNACCEPTED,
// INCONSISTENT, SHARE-REDELIVERED, STUCK). Every record acknowledged to a
// producer on its topic that the final read holds was accepted by a
// member; every record a member got is the one the final read holds at
// its offset; and once a member's acceptance of a record was confirmed no
// member got it again (a delivery of it with a higher delivery count than
// the accepted one's: the broker acquired it again).
func checkShare(r *Result, h *History, finals map[TP]*finalIndex) {
	s := h.Share
	if s == nil {
		return
	}
	if !s.Drained {
		r.add(Stuck, "share group %s: not every acknowledged record was accepted within the drain's bound", s.Group)
	}
	type rec struct {
		tp  TP
		off int64
	}
	accepted := map[rec]bool{}
	confirmedAt := map[rec]int32{} // the delivery count of the first confirmed acceptance
	for _, a := range s.Accepts {
		k := rec{a.TP, a.Offset}
		accepted[k] = true
		if c, ok := confirmedAt[k]; a.Confirmed && (!ok || a.Count < c) {
			confirmedAt[k] = a.Count
		}
	}
	for _, a := range h.Acks {
		if a.Topic != s.Topic {
			continue
		}
		fi := finals[a.TP]
		if fi == nil {
			continue
		}
		if got, ok := fi.at[a.Offset]; !ok || got.Value != a.Value {
			continue // LOST, judged by checkAcks
		}
		if !accepted[rec{a.TP, a.Offset}] {
			r.add(ShareUnaccepted, "%s offset %d (%s): acknowledged to its producer, never accepted by share group %s", a.TP, a.Offset, short(a.Value), s.Group)
		}
	}
	for _, d := range s.Deliveries {
		if fi := finals[d.TP]; fi != nil {
			if got, ok := fi.at[d.Offset]; ok && got.Value != d.Value {
				r.add(Inconsistent, "%s offset %d: share member %s got %q, the log holds %q", d.TP, d.Offset, d.Member, short(d.Value), short(got.Value))
			} else if !ok && d.Offset >= fi.reached {
				r.add(Inconsistent, "%s offset %d: share member %s got %q, above the final high watermark %d", d.TP, d.Offset, d.Member, short(d.Value), fi.reached)
			}
		}
		if c, ok := confirmedAt[rec{d.TP, d.Offset}]; ok && d.Count > c {
			r.add(ShareRedelivered, "%s offset %d: delivered to %s with count %d at %v after an acceptance of its delivery %d was confirmed",
				d.TP, d.Offset, d.Member, d.Count, d.At.Round(time.Millisecond), c)
		}
	}
}
