package share

import (
	"errors"
	"reflect"
	"testing"
)

func testLimits() Limits { return Limits{LockDurationMs: 1000, DeliveryLimit: 3, MaxInFlight: 100} }

// TestAcquireAcceptAdvances: records acquired by two members, accepted
// out of order; the start offset moves only past a done prefix.
func TestAcquireAcceptAdvances(t *testing.T) {
	p := NewPartition(0, testLimits())
	a := p.Acquire("a", 0, 0, 5, 3)
	if want := []AcquiredRange{{0, 2, 1}}; !reflect.DeepEqual(a, want) {
		t.Fatalf("a acquired %v, want %v", a, want)
	}
	from, ok := p.NextFetchOffset()
	if !ok || from != 3 {
		t.Fatalf("next fetch offset %d %v, want 3", from, ok)
	}
	b := p.Acquire("b", 0, from, 5, 10)
	if want := []AcquiredRange{{3, 4, 1}}; !reflect.DeepEqual(b, want) {
		t.Fatalf("b acquired %v, want %v", b, want)
	}
	if err := p.Acknowledge("b", 0, 3, 4, AckAccept); err != nil {
		t.Fatal(err)
	}
	if p.Start() != 0 {
		t.Fatalf("start %d after accepting 3-4 with 0-2 acquired, want 0", p.Start())
	}
	if err := p.Acknowledge("b", 0, 0, 2, AckAccept); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("b accepting a's records: %v, want ErrInvalidRecordState", err)
	}
	if err := p.Acknowledge("a", 0, 0, 2, AckAccept); err != nil {
		t.Fatal(err)
	}
	if p.Start() != 5 || p.End() != 5 {
		t.Fatalf("start %d end %d, want 5 5", p.Start(), p.End())
	}
}

// TestRejectAndReleaseToDeliveryLimit: a record released by each holder
// is delivered again with a higher count until the limit, then archived;
// a rejected record is never delivered again.
func TestRejectAndReleaseToDeliveryLimit(t *testing.T) {
	p := NewPartition(10, testLimits())
	p.Acquire("a", 0, 10, 12, 10)
	if err := p.Acknowledge("a", 0, 11, 11, AckReject); err != nil {
		t.Fatal(err)
	}
	for want := int16(1); want <= 3; want++ {
		if want > 1 {
			got := p.Acquire("a", 0, 10, 12, 10)
			if len(got) != 1 || got[0] != (AcquiredRange{10, 10, want}) {
				t.Fatalf("delivery %d: acquired %v", want, got)
			}
		}
		if st, n := p.State(10); st != Acquired || n != want {
			t.Fatalf("delivery %d: offset 10 is %s count %d", want, st, n)
		}
		if err := p.Acknowledge("a", 0, 10, 10, AckRelease); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.Acquire("a", 0, 10, 12, 10); len(got) != 0 {
		t.Fatalf("acquired %v past the delivery limit", got)
	}
	if p.Start() != 12 {
		t.Fatalf("start %d, want 12 (10 archived at the limit, 11 rejected)", p.Start())
	}
}

// TestLockExpiry: an acquired record whose lock passes is available to
// another member; the first member's late acknowledgement fails.
func TestLockExpiry(t *testing.T) {
	p := NewPartition(0, testLimits())
	p.Acquire("dead", 100, 0, 4, 10)
	if d, ok := p.NextLockExpiry(); !ok || d != 1100 {
		t.Fatalf("next expiry %d %v, want 1100", d, ok)
	}
	if p.ExpireLocks(1099) {
		t.Fatal("locks expired before their deadline")
	}
	if !p.ExpireLocks(1100) {
		t.Fatal("locks did not expire at their deadline")
	}
	got := p.Acquire("live", 1100, 0, 4, 10)
	if want := []AcquiredRange{{0, 3, 2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("reacquired %v, want %v", got, want)
	}
	if err := p.Acknowledge("dead", 1200, 0, 0, AckAccept); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("late ack of the dead member: %v", err)
	}
	if err := p.Acknowledge("live", 1200, 0, 3, AckRenew); err != nil {
		t.Fatal(err)
	}
	if p.ExpireLocks(2150) {
		t.Fatal("a renewed lock expired at its old deadline")
	}
}

// TestReleaseMember: a member that leaves gives its records back.
func TestReleaseMember(t *testing.T) {
	p := NewPartition(0, testLimits())
	p.Acquire("a", 0, 0, 3, 10)
	p.Acquire("b", 0, 3, 6, 10)
	if !p.ReleaseMember("a") {
		t.Fatal("nothing released")
	}
	if off, _ := p.NextFetchOffset(); off != 0 {
		t.Fatalf("next fetch offset %d, want 0", off)
	}
	acq, avail, done := p.Counts()
	if acq != 3 || avail != 3 || done != 0 {
		t.Fatalf("counts %d %d %d", acq, avail, done)
	}
}

// TestMaxInFlight: no more than MaxInFlight records are in flight.
func TestMaxInFlight(t *testing.T) {
	l := testLimits()
	l.MaxInFlight = 4
	p := NewPartition(0, l)
	if got := p.Acquire("a", 0, 0, 100, 100); len(got) != 1 || got[0].Last != 3 {
		t.Fatalf("acquired %v, want 0-3", got)
	}
	if _, ok := p.NextFetchOffset(); ok {
		t.Fatal("a full window offers a fetch offset")
	}
	if err := p.Acknowledge("a", 0, 0, 1, AckAccept); err != nil {
		t.Fatal(err)
	}
	if off, ok := p.NextFetchOffset(); !ok || off != 4 {
		t.Fatalf("next fetch offset %d %v, want 4", off, ok)
	}
}

// TestSnapshotRestore: the persisted state brings back the start offset,
// done records and delivery counts; acquired records come back available.
func TestSnapshotRestore(t *testing.T) {
	p := NewPartition(0, testLimits())
	p.Acquire("a", 0, 0, 6, 10)
	_ = p.Acknowledge("a", 0, 0, 0, AckAccept)
	_ = p.Acknowledge("a", 0, 2, 2, AckAccept)
	_ = p.Acknowledge("a", 0, 3, 3, AckReject)
	s := p.Snapshot(7)
	want := Snapshot{StateEpoch: 0, LeaderEpoch: 7, StartOffset: 1, Batches: []StateBatch{
		{1, 1, Available, 1}, {2, 2, Acknowledged, 1}, {3, 3, Archived, 1}, {4, 5, Available, 1}}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("snapshot %+v, want %+v", s, want)
	}
	q := Restore(s, testLimits())
	got := q.Acquire("b", 0, 0, 8, 10)
	if want := []AcquiredRange{{1, 1, 2}, {4, 5, 2}, {6, 7, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after restore acquired %v, want %v", got, want)
	}
}

// TestAdvanceLogStartAndReset: deleted records leave the window; a reset
// empties it with a new state epoch.
func TestAdvanceLogStartAndReset(t *testing.T) {
	p := NewPartition(0, testLimits())
	p.Acquire("a", 0, 0, 5, 10)
	p.AdvanceLogStart(3)
	if p.Start() != 3 || p.End() != 5 {
		t.Fatalf("start %d end %d", p.Start(), p.End())
	}
	p.Reset(100)
	if p.Start() != 100 || p.End() != 100 || p.StateEpoch() != 1 {
		t.Fatalf("after reset: start %d end %d epoch %d", p.Start(), p.End(), p.StateEpoch())
	}
}

// TestAcknowledgeAllOrNothing: a range with one record not held changes
// nothing.
func TestAcknowledgeAllOrNothing(t *testing.T) {
	p := NewPartition(0, testLimits())
	p.Acquire("a", 0, 0, 2, 10)
	p.Acquire("b", 0, 2, 3, 10)
	if err := p.Acknowledge("a", 0, 0, 2, AckAccept); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("got %v", err)
	}
	if st, _ := p.State(0); st != Acquired {
		t.Fatalf("offset 0 is %s after a failed ack", st)
	}
	if err := p.Acknowledge("a", 0, 0, 1, AckType(9)); !errors.Is(err, ErrInvalidAck) {
		t.Fatalf("unknown type: %v", err)
	}
}

// TestSetLimits: a group config altered while records are in flight
// applies to the next acquisitions and releases; a record already
// acquired keeps its lock deadline.
func TestSetLimits(t *testing.T) {
	p := NewPartition(0, testLimits()) // lock 1000 ms, delivery limit 3
	p.Acquire("a", 0, 0, 1, 1)         // offset 0 locked until 1000
	p.SetLimits(Limits{LockDurationMs: 5000, DeliveryLimit: 1, MaxInFlight: 100})
	if p.ExpireLocks(999) {
		t.Fatal("a lock expired before its deadline")
	}
	p.Acquire("a", 0, 1, 2, 1) // offset 1 locked until 5000
	if !p.ExpireLocks(1000) {
		t.Fatal("offset 0 kept past the deadline it was acquired with")
	}
	// Offset 0, delivered once, reached the new limit of 1: archived.
	if got := p.Acquire("b", 1000, 0, 1, 1); len(got) != 0 {
		t.Fatalf("a record at the new delivery limit delivered again: %v", got)
	}
	if p.ExpireLocks(4999) || !p.ExpireLocks(5000) {
		t.Fatal("offset 1 not held for the new lock duration")
	}
}

// TestArchiveAborted: the records of an aborted transaction, archived as
// a read_committed fetch reads them, are never acquired and count no
// delivery; at the head of the window the start offset passes them, in
// the middle the records around them are acquired as usual; an acquired
// record (taken while the group read uncommitted) stays its holder's; the
// window grows no further than MaxInFlight.
func TestArchiveAborted(t *testing.T) {
	p := NewPartition(0, testLimits())
	if n := p.Archive(0, 4); n != 5 || p.Start() != 5 || p.End() != 5 {
		t.Fatalf("archive 0-4: %d archived, start %d end %d; want 5, 5, 5", n, p.Start(), p.End())
	}
	// A read of 5-19 whose 10-14 are aborted: 5-9 and 15-19 are acquired.
	if n := p.Archive(10, 14); n != 5 {
		t.Fatalf("archive 10-14: %d", n)
	}
	if st, c := p.State(10); st != Archived || c != 0 {
		t.Fatalf("offset 10: %s %d, want Archived with no delivery", st, c)
	}
	got := p.Acquire("a", 0, 5, 20, 100)
	if want := []AcquiredRange{{5, 9, 1}, {15, 19, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	if err := p.Acknowledge("a", 0, 5, 9, AckAccept); err != nil {
		t.Fatal(err)
	}
	if p.Start() != 15 {
		t.Fatalf("start %d after accepting 5-9 with 10-14 archived, want 15", p.Start())
	}
	// Acquired before: left alone.
	if n := p.Archive(15, 19); n != 0 {
		t.Fatalf("archive of acquired 15-19: %d archived", n)
	}
	if st, _ := p.State(17); st != Acquired {
		t.Fatalf("offset 17: %s, want still Acquired", st)
	}
	// At most MaxInFlight (100) in the window: 15-114.
	if n := p.Archive(20, 500); n != 95 || p.End() != 115 {
		t.Fatalf("archive 20-500: %d archived, end %d; want 95, 115", n, p.End())
	}
	if !p.Dirty() {
		t.Fatal("archiving left the state clean")
	}
}

// TestDoneBelow: the records done (acknowledged or archived) below an end
// offset, in memory (DoneBelow) and in a persisted snapshot (doneCount):
// what a read_committed group's lag leaves out below the last stable
// offset.
func TestDoneBelow(t *testing.T) {
	s := Snapshot{StartOffset: 10, Batches: []StateBatch{
		{First: 10, Last: 10, State: Available, DeliveryCount: 1},
		{First: 11, Last: 12, State: Acknowledged, DeliveryCount: 1},
		{First: 13, Last: 16, State: Archived, DeliveryCount: 1},
		{First: 17, Last: 19, State: Acknowledged, DeliveryCount: 1},
	}}
	p := Restore(s, testLimits())
	for _, c := range []struct {
		end  int64
		want int
	}{{5, 0}, {10, 0}, {11, 0}, {12, 1}, {13, 2}, {15, 4}, {17, 6}, {18, 7}, {20, 9}, {100, 9}} {
		if got := p.DoneBelow(c.end); got != c.want {
			t.Errorf("DoneBelow(%d) = %d, want %d", c.end, got, c.want)
		}
		if got := doneCount(&s, c.end); got != int64(c.want) {
			t.Errorf("doneCount(snapshot, %d) = %d, want %d", c.end, got, c.want)
		}
	}
}
