package share

import (
	"errors"
	"fmt"
)

// DeliveryState is the state of one in-flight record of a share-partition,
// with Kafka's numbers (those persisted in ShareSnapshot and ShareUpdate
// records: 0 Available, 2 Acknowledged, 4 Archived; Acquired is never
// persisted, it is written as Available).
type DeliveryState int8

const (
	Available    DeliveryState = 0
	Acquired     DeliveryState = 1
	Acknowledged DeliveryState = 2
	Archived     DeliveryState = 4
)

func (s DeliveryState) String() string {
	switch s {
	case Available:
		return "Available"
	case Acquired:
		return "Acquired"
	case Acknowledged:
		return "Acknowledged"
	case Archived:
		return "Archived"
	}
	return fmt.Sprintf("DeliveryState(%d)", int8(s))
}

// AckType is an acknowledgement type of ShareFetch and ShareAcknowledge.
type AckType int8

const (
	AckGap     AckType = 0 // an offset that is no record (a control record, a compacted gap): archived
	AckAccept  AckType = 1 // processed: acknowledged, never delivered again
	AckRelease AckType = 2 // give back: available again (archived at the delivery limit)
	AckReject  AckType = 3 // unprocessable: archived
	AckRenew   AckType = 4 // KIP-1222: keep the lock for another lock duration
)

// ErrInvalidRecordState is an acknowledgement of a record the member does
// not hold (INVALID_RECORD_STATE).
var ErrInvalidRecordState = errors.New("share: record not acquired by this member")

// ErrInvalidAck is an acknowledgement of an unknown type or of a range
// outside the share-partition (INVALID_REQUEST).
var ErrInvalidAck = errors.New("share: invalid acknowledgement")

// Limits are a share-partition's settings, Kafka's group configs.
type Limits struct {
	LockDurationMs int64 // group.share.record.lock.duration.ms
	DeliveryLimit  int16 // group.share.delivery.count.limit
	MaxInFlight    int   // group.share.partition.max.record.locks
}

// DefaultLimits are Kafka 4's defaults.
func DefaultLimits() Limits {
	return Limits{LockDurationMs: 30000, DeliveryLimit: 5, MaxInFlight: 2000}
}

// maxRestoreSpan bounds the offsets a restored snapshot may keep in flight.
const maxRestoreSpan = 1 << 16

type inflight struct {
	state    DeliveryState
	count    int16  // deliveries so far
	member   string // holder while Acquired
	deadline int64  // lock expiry (ms) while Acquired
}

// AcquiredRange is a run of offsets acquired by one ShareFetch, all with
// the same delivery count.
type AcquiredRange struct {
	First, Last   int64
	DeliveryCount int16
}

// StateBatch is a run of offsets with one delivery state and count, as
// persisted (Kafka's PersisterStateBatch).
type StateBatch struct {
	First, Last   int64
	State         DeliveryState
	DeliveryCount int16
}

// Snapshot is a share-partition's persisted state: its start offset and
// the in-flight records at and above it that are not plain Available with
// no delivery (offsets past the last batch are not yet in flight).
type Snapshot struct {
	StateEpoch  int32
	LeaderEpoch int32
	StartOffset int64
	Batches     []StateBatch
}

// Partition is the state of one share-partition: one share group's view
// of one topic partition. Offsets below Start are done (acknowledged or
// archived, or below the log start); [Start, End) are in flight; End and
// above have never been acquired. Not safe for concurrent use.
type Partition struct {
	limits Limits
	start  int64
	recs   []inflight // recs[i] is offset start+i; len(recs) is End-Start
	epoch  int32      // state epoch
	dirty  bool
}

// NewPartition starts a share-partition at start offset start.
func NewPartition(start int64, limits Limits) *Partition {
	return &Partition{limits: limits, start: max(start, 0)}
}

// SetLimits changes the settings of the acquisitions, renewals and
// releases from now on (a group config altered); records already
// acquired keep their lock deadlines.
func (p *Partition) SetLimits(l Limits) { p.limits = l }

// Restore rebuilds a share-partition from its persisted snapshot. Offsets
// in [StartOffset, last batch] that no batch names are Available with no
// delivery; an Acquired state (never written) is read as Available.
func Restore(s Snapshot, limits Limits) *Partition {
	p := &Partition{limits: limits, start: max(s.StartOffset, 0), epoch: s.StateEpoch}
	for _, b := range s.Batches {
		if b.Last < p.start || b.Last < b.First {
			continue
		}
		first := max(b.First, p.start)
		if b.Last-p.start >= maxRestoreSpan {
			// A snapshot never names more than the in-flight bound; bytes
			// that claim more are not trusted with memory.
			break
		}
		for int64(len(p.recs)) < b.Last-p.start+1 {
			p.recs = append(p.recs, inflight{})
		}
		st := b.State
		if st != Acknowledged && st != Archived {
			st = Available
		}
		for o := first; o <= b.Last; o++ {
			p.recs[o-p.start] = inflight{state: st, count: max(b.DeliveryCount, 0)}
		}
	}
	p.advance()
	return p
}

// Start is the share-partition start offset (SPSO).
func (p *Partition) Start() int64 { return p.start }

// End is the share-partition end offset: the first offset never acquired.
func (p *Partition) End() int64 { return p.start + int64(len(p.recs)) }

// StateEpoch is the state epoch (bumped by AlterShareGroupOffsets and
// DeleteShareGroupOffsets, which reset the partition).
func (p *Partition) StateEpoch() int32 { return p.epoch }

// Dirty reports whether the state changed since the last MarkPersisted.
func (p *Partition) Dirty() bool { return p.dirty }

// MarkPersisted records that the state returned by Snapshot is durable.
func (p *Partition) MarkPersisted() { p.dirty = false }

// Counts returns the records in flight by state.
func (p *Partition) Counts() (acquired, available, done int) {
	for _, r := range p.recs {
		switch r.state {
		case Acquired:
			acquired++
		case Available:
			available++
		default:
			done++
		}
	}
	return
}

// DoneBelow counts the records below end that are Acknowledged or
// Archived and that the start offset has not passed yet.
func (p *Partition) DoneBelow(end int64) int {
	n := 0
	for i, r := range p.recs {
		if p.start+int64(i) >= end {
			break
		}
		if r.state != Acquired && r.state != Available {
			n++
		}
	}
	return n
}

// State returns the state and delivery count of offset o (Acknowledged
// for an offset below Start, Available with count 0 at or past End).
func (p *Partition) State(o int64) (DeliveryState, int16) {
	switch {
	case o < p.start:
		return Acknowledged, 0
	case o >= p.End():
		return Available, 0
	}
	r := p.recs[o-p.start]
	return r.state, r.count
}

// NextFetchOffset is the first offset a fetch should read from: the
// first Available in-flight record, else End. ok is false when the
// in-flight window is full and nothing in it is Available.
func (p *Partition) NextFetchOffset() (off int64, ok bool) {
	for i, r := range p.recs {
		if r.state == Available {
			return p.start + int64(i), true
		}
	}
	return p.End(), len(p.recs) < p.limits.MaxInFlight
}

// Acquire gives member the Available offsets in [from, upTo) (upTo is
// the offset after the last record read from the log, at most the high
// watermark), at most maxRecords of them and never past MaxInFlight in
// flight, locking each until nowMs plus the lock duration and counting a
// delivery. A record whose delivery count has reached the limit is
// archived instead of delivered. The ranges are in offset order.
func (p *Partition) Acquire(member string, nowMs, from, upTo int64, maxRecords int) []AcquiredRange {
	var out []AcquiredRange
	deadline := nowMs + p.limits.LockDurationMs
	from = max(from, p.start)
	n := 0
	for o := from; o < upTo && n < maxRecords; o++ {
		i := o - p.start
		if i >= int64(len(p.recs)) {
			if len(p.recs) >= p.limits.MaxInFlight {
				break
			}
			p.recs = append(p.recs, inflight{})
		}
		r := &p.recs[i]
		if r.state != Available {
			continue
		}
		if r.count >= p.limits.DeliveryLimit {
			r.state, p.dirty = Archived, true
			continue
		}
		r.count++
		r.state, r.member, r.deadline = Acquired, member, deadline
		p.dirty = true
		n++
		if k := len(out); k > 0 && out[k-1].Last == o-1 && out[k-1].DeliveryCount == r.count {
			out[k-1].Last = o
		} else {
			out = append(out, AcquiredRange{First: o, Last: o, DeliveryCount: r.count})
		}
	}
	p.advance()
	return out
}

// Archive archives the Available offsets in [first, last] without
// delivering them: the records of an aborted transaction that a
// read_committed share group reads (Kafka's SharePartition archives them
// as it acquires, and never names them in AcquiredRecords). Offsets
// below Start are done already; offsets past End join the in-flight
// window as Archived, up to MaxInFlight of it, as Acquire would take them;
// an Acquired offset (taken before the group turned read_committed) is
// left to its holder. It returns the offsets archived; the start offset
// passes those at its head.
func (p *Partition) Archive(first, last int64) int {
	first = max(first, p.start)
	n := 0
	for o := first; o <= last; o++ {
		i := o - p.start
		for int64(len(p.recs)) <= i && len(p.recs) < p.limits.MaxInFlight {
			p.recs = append(p.recs, inflight{}) // Available: those before first are acquired as usual
		}
		if i >= int64(len(p.recs)) {
			break
		}
		if r := &p.recs[i]; r.state == Available {
			r.state = Archived
			n++
		}
	}
	if n > 0 {
		p.dirty = true
		p.advance()
	}
	return n
}

// Acknowledge applies member's acknowledgement of type t to [first,
// last]. Every offset in the range must be Acquired by member, or
// nothing changes (ErrInvalidRecordState); Renew extends the locks to
// nowMs plus the lock duration.
func (p *Partition) Acknowledge(member string, nowMs, first, last int64, t AckType) error {
	if last < first || t < AckGap || t > AckRenew {
		return fmt.Errorf("%w: type %d, offsets %d-%d", ErrInvalidAck, t, first, last)
	}
	if first < p.start || last >= p.End() {
		return fmt.Errorf("%w: offsets %d-%d, in flight %d-%d", ErrInvalidRecordState, first, last, p.start, p.End()-1)
	}
	for o := first; o <= last; o++ {
		r := &p.recs[o-p.start]
		if r.state != Acquired || r.member != member {
			return fmt.Errorf("%w: offset %d is %s", ErrInvalidRecordState, o, r.state)
		}
	}
	for o := first; o <= last; o++ {
		r := &p.recs[o-p.start]
		switch t {
		case AckAccept:
			r.state = Acknowledged
		case AckGap, AckReject:
			r.state = Archived
		case AckRelease:
			p.release(r)
		case AckRenew:
			r.deadline = nowMs + p.limits.LockDurationMs
			continue
		}
		r.member, r.deadline = "", 0
	}
	p.dirty = t != AckRenew || p.dirty
	p.advance()
	return nil
}

// release makes an acquired record Available again, or Archived once its
// delivery count has reached the limit.
func (p *Partition) release(r *inflight) {
	r.state, r.member, r.deadline = Available, "", 0
	if r.count >= p.limits.DeliveryLimit {
		r.state = Archived
	}
}

// ExpireLocks releases every record whose lock expired by nowMs, as a
// Release would. It reports whether any did.
func (p *Partition) ExpireLocks(nowMs int64) bool {
	changed := false
	for i := range p.recs {
		if r := &p.recs[i]; r.state == Acquired && r.deadline <= nowMs {
			p.release(r)
			changed = true
		}
	}
	if changed {
		p.dirty = true
		p.advance()
	}
	return changed
}

// NextLockExpiry is the earliest lock deadline, ok false when nothing is
// acquired.
func (p *Partition) NextLockExpiry() (deadline int64, ok bool) {
	for _, r := range p.recs {
		if r.state == Acquired && (!ok || r.deadline < deadline) {
			deadline, ok = r.deadline, true
		}
	}
	return
}

// ReleaseMember releases every record member holds (the member left, or
// closed its share session).
func (p *Partition) ReleaseMember(member string) bool {
	changed := false
	for i := range p.recs {
		if r := &p.recs[i]; r.state == Acquired && r.member == member {
			p.release(r)
			changed = true
		}
	}
	if changed {
		p.dirty = true
		p.advance()
	}
	return changed
}

// AdvanceLogStart moves the start offset up to the log start offset
// logStart when records below it were deleted: they are archived.
func (p *Partition) AdvanceLogStart(logStart int64) {
	if logStart <= p.start {
		return
	}
	drop := min(logStart-p.start, int64(len(p.recs)))
	p.recs = p.recs[drop:]
	p.start = logStart
	if len(p.recs) == 0 {
		p.recs = nil
	}
	p.dirty = true
	p.advance()
}

// Reset moves the share-partition to start offset start with nothing in
// flight and a new state epoch (AlterShareGroupOffsets).
func (p *Partition) Reset(start int64) {
	p.start, p.recs, p.dirty = max(start, 0), nil, true
	p.epoch++
}

// advance moves the start offset past the done records at its head.
func (p *Partition) advance() {
	i := 0
	for i < len(p.recs) && (p.recs[i].state == Acknowledged || p.recs[i].state == Archived) {
		i++
	}
	if i > 0 {
		p.start += int64(i)
		p.recs = p.recs[i:]
		p.dirty = true
	}
	if len(p.recs) == 0 {
		p.recs = nil
	}
}

// Snapshot is the state to persist: the start offset and runs of equal
// (state, delivery count), Acquired written as Available. leaderEpoch is
// the partition's leader epoch, recorded with it.
func (p *Partition) Snapshot(leaderEpoch int32) Snapshot {
	s := Snapshot{StateEpoch: p.epoch, LeaderEpoch: leaderEpoch, StartOffset: p.start}
	for i, r := range p.recs {
		st := r.state
		if st == Acquired {
			st = Available
		}
		o := p.start + int64(i)
		if k := len(s.Batches); k > 0 && s.Batches[k-1].Last == o-1 && s.Batches[k-1].State == st && s.Batches[k-1].DeliveryCount == r.count {
			s.Batches[k-1].Last = o
			continue
		}
		s.Batches = append(s.Batches, StateBatch{First: o, Last: o, State: st, DeliveryCount: r.count})
	}
	return s
}
