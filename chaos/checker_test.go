package chaos

import (
	"testing"
	"time"
)

// cleanHistory is a hand-made history of a run with nothing wrong: one
// producer's 10 records on t-0, a compacted topic c-0 with two keys, a
// consumer that read them all, a group's commits, two identical replicas
// and a bucket whose objects are all referenced.
func cleanHistory() *History {
	tp := TP{"t", 0}
	ctp := TP{"c", 0}
	h := &History{Compacted: []string{"c"}, HealEnd: 50 * time.Second, ResumeBound: 10 * time.Second, OrphanGrace: time.Minute}
	fin := FinalRead{TP: tp, LogStart: 0, HW: 10}
	for i := range int64(10) {
		v := Value("p0", i, 4)
		h.Acks = append(h.Acks, Ack{TP: tp, Producer: "p0", Seq: i, Value: v, Offset: i, At: time.Duration(i) * time.Second})
		fin.Records = append(fin.Records, Rec{Offset: i, Value: v})
		h.Reads = append(h.Reads, Read{TP: tp, Rec: Rec{Offset: i, Value: v}, Consumer: "c0", At: time.Duration(i) * time.Second})
	}
	// Compacted: key a written at 0 and 2, key b at 1; offset 0 is gone.
	cfin := FinalRead{TP: ctp, LogStart: 0, HW: 3}
	for i, k := range []string{"a", "b", "a"} {
		v := Value("k0", int64(i), 0)
		h.Acks = append(h.Acks, Ack{TP: ctp, Producer: "k0", Seq: int64(i), Key: k, Value: v, Offset: int64(i)})
		if i > 0 {
			cfin.Records = append(cfin.Records, Rec{Offset: int64(i), Key: k, Value: v})
		}
	}
	h.Final = []FinalRead{fin, cfin}
	for i, off := range []int64{2, 5, 5, 9} {
		src := "commit"
		if i%2 == 1 {
			src = "fetch"
		}
		at := time.Duration(i+1) * time.Second
		h.Commit = append(h.Commit, Commit{Group: "g", TP: tp, Offset: off, Source: src, Sent: at - 100*time.Millisecond, At: at})
	}
	h.Actors = []Actor{{Name: "p0", Kind: "producer", ResumedAt: 52 * time.Second}, {Name: "c0", Kind: "consumer", ResumedAt: 51 * time.Second}}
	bs := []BatchSig{{0, 4, 0xaa}, {5, 9, 0xbb}}
	h.Replicas = []ReplicaLog{{TP: tp, Node: 1, Bound: 10, Batches: bs}, {TP: tp, Node: 2, Bound: 10, Batches: bs},
		{TP: tp, Node: 3, Bound: 10, Batches: bs[1:]}} // node 3's local log starts later
	h.Bucket = []BucketObject{{Key: "x/t/0/a.log", Age: time.Hour}, {Key: "x/t/0/new.log", Age: time.Second}}
	h.Referenced = []string{"x/t/0/a.log"}
	return h
}

func TestCheckCleanHistory(t *testing.T) {
	r := Check(cleanHistory())
	if r.Total() != 0 {
		t.Fatalf("a clean history has violations: %v", r.Violations)
	}
}

// TestCheckFindsEachKind breaks the clean history in one way per case and
// wants exactly that kind (and the count) reported.
func TestCheckFindsEachKind(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kind  Kind
		count int
		spoil func(h *History)
	}{
		{"acked record missing", Lost, 1, func(h *History) {
			// offset 4 gone from the final read; the read of it and the gap are reported too
			h.Final[0].Records = append(h.Final[0].Records[:4:4], h.Final[0].Records[5:]...)
			h.Reads = h.Reads[:4]
		}},
		{"another value at an acked offset", Lost, 1, func(h *History) {
			h.Final[0].Records[3].Value = Value("p9", 1, 0)
			h.Reads = h.Reads[:3]
		}},
		{"acked above the final high watermark", Lost, 2, func(h *History) {
			h.Final[0].HW = 8
			h.Final[0].Records = h.Final[0].Records[:8]
			h.Reads = h.Reads[:8]
		}},
		{"compacted key lost", Lost, 1, func(h *History) {
			h.Final[1].Records = h.Final[1].Records[:1] // key a's latest value (offset 2) gone
		}},
		{"one value at two offsets", Duplicate, 1, func(h *History) {
			v := h.Final[0].Records[9].Value
			h.Final[0].Records = append(h.Final[0].Records, Rec{Offset: 10, Value: v})
			h.Final[0].HW = 11
			// and its seq does not increase: a reorder too, checked below
		}},
		{"one value read at two offsets", Duplicate, 1, func(h *History) {
			h.Reads = append(h.Reads, Read{TP: h.Reads[0].TP, Rec: Rec{Offset: 12, Value: h.Reads[0].Value}, Consumer: "c1"})
		}},
		{"read differs from the final read", Inconsistent, 1, func(h *History) {
			h.Reads[6].Value = Value("p7", 6, 0)
		}},
		{"read above the final high watermark", Inconsistent, 1, func(h *History) {
			h.Reads = append(h.Reads, Read{TP: h.Reads[0].TP, Rec: Rec{Offset: 10, Value: Value("p0", 10, 4)}, Consumer: "c0"})
		}},
		{"two reads at one offset differ", Inconsistent, 1, func(h *History) {
			// on a partition without a final read: the reads alone disagree
			u := TP{"u", 0}
			h.Reads = append(h.Reads, Read{TP: u, Rec: Rec{Offset: 20, Value: "p5:1:"}}, Read{TP: u, Rec: Rec{Offset: 20, Value: "p5:2:"}})
		}},
		{"producer sequence out of order", Reorder, 1, func(h *History) {
			f := h.Final[0].Records
			f[5].Value, f[6].Value = f[6].Value, f[5].Value
			for i := range h.Acks[:10] {
				h.Acks[i].Value = f[i].Value
			}
			for i := range h.Reads {
				h.Reads[i].Value = f[i].Value
			}
		}},
		{"offsets missing", Gap, 1, func(h *History) {
			// a record written past the end, unacknowledged and never read
			h.Final[0].Records = append(h.Final[0].Records, Rec{Offset: 12, Value: Value("p1", 0, 0)})
			h.Final[0].HW = 13
		}},
		{"offsets missing below the HW", Gap, 1, func(h *History) { h.Final[0].HW = 12 }},
		{"committed offset goes back", OffsetRegression, 1, func(h *History) {
			h.Commit = append(h.Commit, Commit{Group: "g", TP: TP{"t", 0}, Offset: 3, Source: "fetch", Sent: 30 * time.Second, At: 30 * time.Second})
		}},
		{"a late commit answer is no regression, a fetch after it is", OffsetRegression, 1, func(h *History) {
			tp := TP{"t", 0}
			// commits 12 and 13 in flight together, 13 seen by a fetch before 12's answer
			h.Commit = append(h.Commit,
				Commit{Group: "g", TP: tp, Offset: 12, Source: "commit", Sent: 10 * time.Second, At: 12 * time.Second},
				Commit{Group: "g", TP: tp, Offset: 13, Source: "fetch", Sent: 11 * time.Second, At: 11 * time.Second},
				Commit{Group: "g", TP: tp, Offset: 13, Source: "commit", Sent: 10 * time.Second, At: 12 * time.Second},
				Commit{Group: "g", TP: tp, Offset: 12, Source: "fetch", Sent: 13 * time.Second, At: 13 * time.Second})
		}},
		{"a new member resumes from before a commit", OffsetRegression, 1, func(h *History) {
			tp := TP{"t", 0}
			h.Commit = append(h.Commit,
				Commit{Group: "g", TP: tp, Offset: 0, Source: "resume", Sent: 3 * time.Second, At: 31 * time.Second},         // after commit 5 at 3 s
				Commit{Group: "g", TP: tp, Offset: 2, Source: "resume", Sent: 1500 * time.Millisecond, At: 32 * time.Second}) // made before it: fine
		}},
		{"no offset after a member resumed from the log start is none; after a commit it is", OffsetRegression, 1, func(h *History) {
			v, w := TP{"v", 0}, TP{"w", 0}
			h.Commit = append(h.Commit,
				// transactions seed 203: a member found no offset, read from 0, and
				// an OffsetFetch then answered -1
				Commit{Group: "g", TP: v, Offset: 0, Source: "resume", Sent: 5 * time.Second, At: 5 * time.Second},
				Commit{Group: "g", TP: v, Offset: -1, Source: "fetch", Sent: 6 * time.Second, At: 6 * time.Second},
				Commit{Group: "g", TP: w, Offset: 0, Source: "commit", Sent: 5 * time.Second, At: 5 * time.Second},
				Commit{Group: "g", TP: w, Offset: -1, Source: "fetch", Sent: 6 * time.Second, At: 6 * time.Second})
		}},
		{"heal over its bound", Stuck, 1, func(h *History) { h.HealErr = "partition t-0 has no leader after 60s" }},
		{"producer never resumed", Stuck, 1, func(h *History) { h.Actors[0].ResumedAt = 0 }},
		{"consumer resumed late", Stuck, 1, func(h *History) { h.Actors[1].ResumedAt = 70 * time.Second }},
		{"final read stopped", Stuck, 1, func(h *History) {
			h.Final[0].Err = "context deadline exceeded"
			h.Final[0].Records = h.Final[0].Records[:6]
		}},
		{"replica holds another batch", ReplicaDivergence, 2, func(h *History) {
			bs := []BatchSig{{0, 4, 0xaa}, {5, 9, 0xcc}}
			h.Replicas[1].Batches = bs // differs from node 1 and from node 3
		}},
		{"replica holds less", ReplicaDivergence, 2, func(h *History) {
			h.Replicas[2].Batches = []BatchSig{{5, 7, 0xbb}}
		}},
		{"object without metadata", Orphans, 1, func(h *History) {
			h.Bucket = append(h.Bucket, BucketObject{Key: "x/t/0/old.log", Age: 2 * time.Minute})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := cleanHistory()
			tc.spoil(h)
			r := Check(h)
			if r.Counts[tc.kind] != tc.count {
				t.Fatalf("%s: want %d, got %d; all: %v", tc.kind, tc.count, r.Counts[tc.kind], r.Violations)
			}
			for _, v := range r.Violations {
				if v.Kind == tc.kind && v.Detail == "" {
					t.Fatalf("%s without a detail", v.Kind)
				}
			}
			t.Logf("%v", r.Violations)
		})
	}
}

// TestCheckSpoilsReportOthersToo pins what a single defect also shows as:
// a missing acknowledged offset in a topic that is not compacted is a GAP
// and a LOST, and a consumer's read of it is INCONSISTENT.
func TestCheckSpoilsReportOthersToo(t *testing.T) {
	h := cleanHistory()
	h.Final[0].Records = append(h.Final[0].Records[:4:4], h.Final[0].Records[5:]...)
	r := Check(h)
	if r.Counts[Lost] != 1 || r.Counts[Gap] != 1 || r.Counts[Inconsistent] != 1 || r.Total() != 3 {
		t.Fatalf("want LOST, GAP, INCONSISTENT once each: %v", r.Violations)
	}
}

func TestValueRoundTrip(t *testing.T) {
	p, s, ok := ParseValue(Value("p3", 12345, 10))
	if !ok || p != "p3" || s != 12345 {
		t.Fatalf("got %q %d %v", p, s, ok)
	}
	if _, _, ok := ParseValue("garbage"); ok {
		t.Fatal("garbage parsed")
	}
}

// etlHistory adds to cleanHistory a transactional workload that consumed
// t-0 up to offset 8 and wrote each record once to etl-out-0, with holes
// where markers and an aborted attempt were.
func etlHistory() *History {
	h := cleanHistory()
	out := FinalRead{TP: TP{etlOutput, 0}, LogStart: 0, HW: 20}
	for i := range int64(8) {
		out.Records = append(out.Records, Rec{Offset: 2*i + 3, Value: ETLValue(0, i, Value("p0", i, 4))})
	}
	h.ETL = &ETLHistory{Input: "t", Output: etlOutput, Group: etlGroup, Committed: map[int32]int64{0: 8},
		Outputs: []FinalRead{out}, Commits: 8, Aborts: 1, Drained: true}
	return h
}

func TestCheckETL(t *testing.T) {
	if r := Check(etlHistory()); r.Total() != 0 {
		t.Fatalf("clean transactional history: %v", r.Violations)
	}
	cases := []struct {
		name   string
		mutate func(h *History)
		want   Kind
	}{
		{"an aborted attempt's output visible", func(h *History) {
			o := &h.ETL.Outputs[0]
			o.Records = append(o.Records, Rec{Offset: 19, Value: ETLValue(0, 8, Value("p0", 8, 4))})
		}, AbortedRead},
		{"an input written twice", func(h *History) {
			o := &h.ETL.Outputs[0]
			o.Records = append(o.Records, Rec{Offset: 19, Value: ETLValue(0, 2, Value("p0", 2, 4))})
		}, Duplicate},
		{"a committed input's output missing", func(h *History) {
			o := &h.ETL.Outputs[0]
			o.Records = o.Records[:len(o.Records)-1]
		}, Lost},
		{"an output carrying another value than its input", func(h *History) {
			h.ETL.Outputs[0].Records[0].Value = ETLValue(0, 0, "other")
		}, Inconsistent},
		{"the group never caught up", func(h *History) { h.ETL.Drained = false }, Stuck},
	}
	for _, c := range cases {
		h := etlHistory()
		c.mutate(h)
		r := Check(h)
		if r.Counts[c.want] == 0 {
			t.Errorf("%s: no %s in %v", c.name, c.want, r.Violations)
		}
	}
}

func TestParseETLValue(t *testing.T) {
	v := ETLValue(2, 77, "p1:5:x|y")
	p, off, in, ok := ParseETLValue(v)
	if !ok || p != 2 || off != 77 || in != "p1:5:x|y" {
		t.Fatalf("ParseETLValue(%q) = %d %d %q %v", v, p, off, in, ok)
	}
	for _, bad := range []string{"", "etl|", "etl|a|1|v", "p0:1:x", "etl|1|b|v"} {
		if _, _, _, ok := ParseETLValue(bad); ok {
			t.Errorf("ParseETLValue(%q) ok", bad)
		}
	}
}

// TestCheckLeaderAcksTopic: on an acks=1 topic an acknowledged record may
// be lost and a retried one written twice (counted, not violations), but a
// record a consumer saw must still be in the final read, and offsets must
// not be missing.
func TestCheckLeaderAcksTopic(t *testing.T) {
	weak := func() *History {
		h := cleanHistory()
		h.LeaderAcks = []string{"w"}
		w := TP{"w", 0}
		fin := FinalRead{TP: w, HW: 4}
		// acknowledged: seq 0 at 0, seq 1 at 1 (lost in a failover: the new
		// leader wrote seq 2 there), seq 2 at 1 again, then seq 2 retried
		// (written twice) and seq 3.
		for i, seq := range []int64{0, 2, 2, 3} {
			fin.Records = append(fin.Records, Rec{Offset: int64(i), Value: Value("pa1", seq, 0)})
		}
		h.Acks = append(h.Acks,
			Ack{TP: w, Producer: "pa1", Seq: 0, Value: Value("pa1", 0, 0), Offset: 0},
			Ack{TP: w, Producer: "pa1", Seq: 1, Value: Value("pa1", 1, 0), Offset: 1},
			Ack{TP: w, Producer: "pa1", Seq: 2, Value: Value("pa1", 2, 0), Offset: 1},
			Ack{TP: w, Producer: "pa1", Seq: 3, Value: Value("pa1", 3, 0), Offset: 3})
		for _, rec := range fin.Records {
			h.Reads = append(h.Reads, Read{TP: w, Rec: rec, Consumer: "cw"})
		}
		h.Final = append(h.Final, fin)
		return h
	}
	r := Check(weak())
	if r.Total() != 0 || r.LeaderAcksLost != 1 {
		t.Fatalf("acks=1 losses and duplicates: %d violations %v, %d lost (want 0, 1)", r.Total(), r.Violations, r.LeaderAcksLost)
	}

	// The same history on an acks=all topic is LOST, DUPLICATE and REORDER.
	h := weak()
	h.LeaderAcks = nil
	r = Check(h)
	for _, k := range []Kind{Lost, Duplicate, Reorder} {
		if r.Counts[k] == 0 {
			t.Errorf("without leader acks: no %s (%v)", k, r.Violations)
		}
	}

	// A consumer saw seq 1 at offset 1 before the failover: served above
	// the high watermark, so INCONSISTENT even with acks=1.
	h = weak()
	h.Reads = append(h.Reads, Read{TP: TP{"w", 0}, Rec: Rec{Offset: 1, Value: Value("pa1", 1, 0)}, Consumer: "cw2"})
	if r := Check(h); r.Counts[Inconsistent] != 1 || r.Total() != 1 {
		t.Fatalf("read of a record the final read lacks: %v, want one INCONSISTENT", r.Violations)
	}

	// Offsets missing from the final read are a GAP on any topic.
	h = weak()
	h.Final[len(h.Final)-1].HW = 6
	if r := Check(h); r.Counts[Gap] != 1 || r.Total() != 1 {
		t.Fatalf("offsets missing below the HW: %v, want one GAP", r.Violations)
	}
}

// TestCheckTrims: records below an acknowledged DeleteRecords' low
// watermark are gone on purpose (no LOST), and a final read that starts
// below it again is UNDELETED.
func TestCheckTrims(t *testing.T) {
	trimmed := func() *History {
		h := cleanHistory()
		h.Trims = []Trim{{TP: TP{"t", 0}, Offset: 4, Acked: true, LowWatermark: 4, Sent: 20 * time.Second, At: 21 * time.Second}}
		h.Final[0].LogStart = 4
		h.Final[0].Records = h.Final[0].Records[4:]
		return h
	}
	if r := Check(trimmed()); r.Total() != 0 {
		t.Fatalf("records below an acknowledged trim: %v, want none", r.Violations)
	}
	h := trimmed()
	h.Final[0].LogStart = 2 // and offsets 2, 3 are not in the read: a GAP too
	if r := Check(h); r.Counts[Undeleted] != 1 {
		t.Fatalf("a final read starting below the low watermark: %v, want one UNDELETED", r.Violations)
	}
	h = trimmed()
	h.Trims = nil // the same read without the trim: offsets 0-3 acknowledged and gone
	if r := Check(h); r.Counts[Lost] != 4 {
		t.Fatalf("without the trim: %v, want four LOST", r.Violations)
	}
	// A DeleteRecords that timed out may have taken effect: no LOST below
	// what it asked, and no UNDELETED either.
	h = trimmed()
	h.Trims[0].Acked, h.Trims[0].LowWatermark = false, -1
	if r := Check(h); r.Total() != 0 {
		t.Fatalf("records below an unacknowledged trim: %v, want none", r.Violations)
	}
	// Records above what any DeleteRecords asked for are judged.
	h = trimmed()
	h.Trims[0].Offset, h.Trims[0].LowWatermark = 2, 2
	if r := Check(h); r.Counts[Lost] != 2 {
		t.Fatalf("offsets 2-3 gone above a trim to 2: %v, want two LOST", r.Violations)
	}
}

// TestCheckShare: the share group workload's checks on the clean history,
// with members that got and accepted each record of t-0 once, and then
// broken one way per case.
func TestCheckShare(t *testing.T) {
	shared := func() *History {
		h := cleanHistory()
		s := &ShareHistory{Group: "sg", Topic: "t", Drained: true}
		for i := range int64(10) {
			tp, v := TP{"t", 0}, Value("p0", i, 4)
			s.Deliveries = append(s.Deliveries, ShareDelivery{TP: tp, Offset: i, Value: v, Member: "s0", Count: 1, At: time.Duration(i) * time.Second})
			s.Accepts = append(s.Accepts, ShareAccept{TP: tp, Offset: i, Member: "s0", Count: 1, Confirmed: i != 3, At: time.Duration(i) * time.Second})
		}
		// Offset 3's acceptance was not confirmed: delivered again, count
		// 2, and accepted then.
		s.Deliveries = append(s.Deliveries, ShareDelivery{TP: TP{"t", 0}, Offset: 3, Value: Value("p0", 3, 4), Member: "s1", Count: 2, At: 20 * time.Second})
		s.Accepts = append(s.Accepts, ShareAccept{TP: TP{"t", 0}, Offset: 3, Member: "s1", Count: 2, Confirmed: true, At: 20 * time.Second})
		h.Share = s
		return h
	}
	if r := Check(shared()); r.Total() != 0 {
		t.Fatalf("a clean share history has violations: %v", r.Violations)
	}
	for _, tc := range []struct {
		name  string
		spoil func(h *History)
		kind  Kind
	}{
		{"an accepted record delivered again", func(h *History) {
			h.Share.Deliveries = append(h.Share.Deliveries, ShareDelivery{TP: TP{"t", 0}, Offset: 5, Value: Value("p0", 5, 4), Member: "s1", Count: 2, At: 30 * time.Second})
		}, ShareRedelivered},
		{"a record never accepted", func(h *History) {
			h.Share.Deliveries, h.Share.Accepts = h.Share.Deliveries[1:], h.Share.Accepts[1:]
		}, ShareUnaccepted},
		{"a record not in the log", func(h *History) {
			h.Share.Deliveries[4].Value = "p9:1:"
		}, Inconsistent},
		{"not drained", func(h *History) { h.Share.Drained = false }, Stuck},
	} {
		h := shared()
		tc.spoil(h)
		r := Check(h)
		if r.Total() != 1 || r.Counts[tc.kind] != 1 {
			t.Errorf("%s: want one %s, got %v", tc.name, tc.kind, r.Violations)
		}
	}
}
