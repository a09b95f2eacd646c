package share

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
)

// RemoteReader reads a partition's remote (tiered) segments: the cold
// read path Fetch uses (tiering/coldread.Reader satisfies it).
type RemoteReader interface {
	// Read returns whole record batches from the batch containing offset,
	// at most maxBytes (at least one batch if minOne); nextOffset is the
	// offset after the last returned batch. The caller owns batches.
	Read(ctx context.Context, topic string, partition int32, offset int64, maxBytes int, minOne bool) (batches []byte, nextOffset int64, err error)
	// AbortedTxns returns the aborted transactions overlapping [from,
	// upTo) that the remote segments' transaction indexes know; complete
	// is false when the markers of some may lie in local segments.
	AbortedTxns(ctx context.Context, topic string, partition int32, from, upTo int64) (txns []segment.AbortedTxn, complete bool, err error)
}

// Persister keeps share-partition state durable (the share-state APIs of
// Kafka's share coordinator). Load returns nil for a share-partition
// without state.
type Persister interface {
	Load(ctx context.Context, key StateKey) (*Snapshot, error)
	Save(ctx context.Context, key StateKey, s Snapshot) error
}

// Manager holds the share-partition state of the partitions this node
// leads, and the share sessions of ShareFetch and ShareAcknowledge. It is
// safe for concurrent use. One mutex guards every share-partition and
// session: the work under it is arithmetic on in-flight windows; reads
// of the log and the persister's I/O happen outside it.
type Manager struct {
	cfg       Config
	leaders   partition.Leaders
	dir       partition.Directory
	remote    RemoteReader // nil: local reads only
	persister Persister    // nil: state lives in memory only

	mu struct {
		sync.Mutex
		parts    map[partKey]*sharePartition
		sessions map[sessionKey]*session
		// released is closed (and replaced) when records become available
		// again, to wake ShareFetch long polls.
		released chan struct{}
	}
}

type partKey struct {
	group     string
	topic     string
	partition int32
}

type sharePartition struct {
	// saveMu orders the saves of this share-partition: each takes its
	// snapshot under it, so a save never overwrites a newer one.
	saveMu      sync.Mutex
	st          *Partition
	key         StateKey
	leaderEpoch int32
}

type sessionKey struct{ group, member string }

type session struct {
	next  int32 // the epoch the next request must carry
	parts map[tidp]struct{}
	// unbind stops the release of the member's records when the
	// connection that opened the session closes (nil: not bound).
	unbind func() bool
}

type tidp struct {
	id [16]byte
	p  int32
}

// NewManager returns a manager reading leaders' logs (and remote, which
// may be nil) and persisting through persister (nil: memory only).
func NewManager(cfg Config, leaders partition.Leaders, dir partition.Directory, remote RemoteReader, persister Persister) *Manager {
	cfg.setDefaults()
	m := &Manager{cfg: cfg, leaders: leaders, dir: dir, remote: remote, persister: persister}
	m.mu.parts = map[partKey]*sharePartition{}
	m.mu.sessions = map[sessionKey]*session{}
	m.mu.released = make(chan struct{})
	return m
}

// wakeLocked wakes the long polls.
// REQUIRES: m.mu held.
func (m *Manager) wakeLocked() {
	close(m.mu.released)
	m.mu.released = make(chan struct{})
}

// ReleaseMember releases every record member holds in group on this node
// and drops its share session here.
func (m *Manager) ReleaseMember(group, member string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.releaseMemberLocked(group, member)
}

// releaseMemberLocked releases every record member holds in group on this
// node and drops its share session here.
// REQUIRES: m.mu held.
func (m *Manager) releaseMemberLocked(group, member string) {
	changed := false
	for k, sp := range m.mu.parts {
		if k.group == group && sp.st.ReleaseMember(member) {
			changed = true
		}
	}
	m.dropSessionLocked(sessionKey{group, member})
	if changed {
		m.wakeLocked()
	}
	m.evictIdleLocked(group)
}

// dropSessionLocked forgets k's share session, if any.
// REQUIRES: m.mu held.
func (m *Manager) dropSessionLocked(k sessionKey) {
	if s := m.mu.sessions[k]; s != nil && s.unbind != nil {
		s.unbind()
	}
	delete(m.mu.sessions, k)
}

// bindSessionLocked ties session s of k to the connection whose context
// is conn: when it closes while s is still k's session, the member's
// records on this node are released at once and s is dropped, as Kafka's
// share session cache does on a disconnect (a member that dies without
// closing its session or leaving no longer holds its records until the
// locks expire).
// REQUIRES: m.mu held.
func (m *Manager) bindSessionLocked(conn context.Context, k sessionKey, s *session) {
	s.unbind = context.AfterFunc(conn, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.mu.sessions[k] == s {
			m.releaseMemberLocked(k.group, k.member)
		}
	})
}

// evictIdleLocked drops from memory the share-partitions of group that
// no share session names, that hold no acquired record and whose state is
// persisted: the next fetch reads them again from the persister, and so
// sees what AlterShareGroupOffsets or DeleteShareGroupOffsets wrote while
// the group was empty.
// REQUIRES: m.mu held.
func (m *Manager) evictIdleLocked(group string) {
	if m.persister == nil {
		return
	}
	used := map[tidp]bool{}
	for sk, s := range m.mu.sessions {
		if sk.group == group {
			for k := range s.parts {
				used[k] = true
			}
		}
	}
	for k, sp := range m.mu.parts {
		if k.group != group || sp.st.Dirty() || used[tidp{sp.key.TopicID, k.partition}] {
			continue
		}
		if acquired, _, _ := sp.st.Counts(); acquired == 0 {
			delete(m.mu.parts, k)
		}
	}
}

// partition returns the share-partition state of group on topic-p, which
// rep leads, creating it from the persister or at the group's
// share.auto.offset.reset position, with the group's lock duration and
// delivery limit as they are at this call.
func (m *Manager) partition(ctx context.Context, group, topic string, p int32, id [16]byte, rep *partition.Replica) (*sharePartition, error) {
	k := partKey{group, topic, p}
	gs := m.cfg.group(group)
	m.mu.Lock()
	sp := m.mu.parts[k]
	epoch := rep.LeaderEpoch()
	if sp != nil && sp.leaderEpoch == epoch {
		sp.st.SetLimits(gs.limits) // the group's configs as they are now
		m.mu.Unlock()
		return sp, nil
	}
	m.mu.Unlock()
	// New here, or this node leads the partition again after another node
	// did: the state is (re)read from the persister.
	key := StateKey{Group: group, TopicID: id, Partition: p}
	var st *Partition
	var resetEpoch int32
	if m.persister != nil {
		snap, err := m.persister.Load(ctx, key)
		if err != nil {
			return nil, err
		}
		if snap != nil && snap.StartOffset >= 0 {
			st = Restore(*snap, gs.limits)
		} else if snap != nil {
			resetEpoch = snap.StateEpoch // DeleteShareGroupOffsets: start over at the reset position
		}
	}
	if st == nil {
		start := rep.HighWatermark()
		if gs.autoOffsetReset == "earliest" {
			start = rep.LogStartOffset()
		}
		st = NewPartition(start, gs.limits)
		st.epoch, st.dirty = resetEpoch, true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.mu.parts[k]; cur != nil && cur.leaderEpoch == epoch {
		return cur, nil
	}
	sp = &sharePartition{st: st, key: key, leaderEpoch: epoch}
	m.mu.parts[k] = sp
	return sp, nil
}

// persist saves sp's state when it changed. The state is saved before the
// request that changed it is answered, so an acknowledged Accept survives
// the leader's failover (with a persister).
func (m *Manager) persist(ctx context.Context, sp *sharePartition) error {
	sp.saveMu.Lock()
	defer sp.saveMu.Unlock()
	m.mu.Lock()
	if !sp.st.Dirty() || m.persister == nil {
		sp.st.MarkPersisted()
		m.mu.Unlock()
		return nil
	}
	snap := sp.st.Snapshot(sp.leaderEpoch)
	sp.st.MarkPersisted()
	m.mu.Unlock()
	if err := m.persister.Save(ctx, sp.key, snap); err != nil {
		m.mu.Lock()
		sp.st.dirty = true
		if errors.Is(err, ErrFencedStateEpoch) {
			// AlterShareGroupOffsets or DeleteShareGroupOffsets reset the
			// share-partition: drop this state, the next request reads
			// the new one.
			k := partKey{sp.key.Group, "", sp.key.Partition}
			for pk, cur := range m.mu.parts {
				if cur == sp {
					k = pk
				}
			}
			delete(m.mu.parts, k)
		}
		m.mu.Unlock()
		return err
	}
	return nil
}

// readFrom reads whole batches of rep from offset from, below bound (the
// high watermark, or the last stable offset for read_committed), at most
// maxBytes (one batch anyway): from the local log, or from remote
// segments for an offset below the local log start (cold reports which).
// upTo is the offset after the last batch returned (from when none).
// Batches at or past bound may follow; the caller drops them.
func (m *Manager) readFrom(ctx context.Context, rep *partition.Replica, topic string, p int32, from, bound int64, maxBytes int) (batches []byte, upTo int64, cold bool, err error) {
	if from >= bound {
		return nil, from, false, nil
	}
	if from < rep.LocalLogStartOffset() {
		if m.remote == nil {
			return nil, from, true, fmt.Errorf("%w: offset %d is below the local log start and there is no cold tier", segment.ErrOffsetOutOfRange, from)
		}
		b, next, err := m.remote.Read(ctx, topic, p, from, maxBytes, true)
		if err != nil {
			return nil, from, true, err
		}
		return b, next, true, nil
	}
	for off := from; ; {
		rr, err := rep.Read(off, maxBytes, true)
		if err != nil {
			return nil, from, false, err
		}
		if rr.Size == 0 {
			if rr.NextOffset <= off {
				return nil, from, false, nil
			}
			off = rr.NextOffset
			continue
		}
		buf := make([]byte, rr.Size)
		if _, err := rr.File.ReadAt(buf, rr.Position); err != nil {
			return nil, from, false, fmt.Errorf("share: read %s-%d at %d: %w", topic, p, off, err)
		}
		return buf, rr.NextOffset, false, nil
	}
}

// abortedTxns returns the aborted transactions of rep overlapping [from,
// upTo), as a read_committed Fetch gets them: for a cold read from the
// remote transaction indexes and then, unless those settle it, the local
// ones (a marker written after the last uploaded segment), each marker
// once; for a local read from the local ones.
func (m *Manager) abortedTxns(ctx context.Context, rep *partition.Replica, topic string, p int32, from, upTo int64, cold bool) ([]segment.AbortedTxn, error) {
	var out []segment.AbortedTxn
	if cold && m.remote != nil {
		txns, complete, err := m.remote.AbortedTxns(ctx, topic, p, from, upTo)
		if err != nil {
			return nil, err
		}
		if complete {
			return txns, nil
		}
		out = txns
	}
	seen := make(map[int64]bool, len(out))
	for _, a := range out {
		seen[a.LastOffset] = true
	}
	for _, a := range rep.Log().AbortedTxns(from, upTo) {
		if !seen[a.LastOffset] {
			out = append(out, a)
		}
	}
	return out, nil
}

// abortedBatches returns the offset ranges of the data batches among bs
// (spans of data) that belong to one of txns: transactional batches of a
// producer with an aborted transaction whose range, up to its ABORT
// marker, holds the batch (Kafka's
// SharePartition.fetchAbortedTransactionRecordBatches). Control batches
// are never in it: their offsets are acquired, and the consumer
// acknowledges them as gaps.
func abortedBatches(data []byte, bs []batchSpan, txns []segment.AbortedTxn) []batchSpan {
	if len(txns) == 0 {
		return nil
	}
	byProducer := map[int64][]segment.AbortedTxn{}
	for _, a := range txns {
		byProducer[a.ProducerID] = append(byProducer[a.ProducerID], a)
	}
	var out []batchSpan
	for _, b := range bs {
		h, err := batch.ParseHeader(data[b.start:b.end])
		if err != nil || !h.Transactional() || h.Control() {
			continue
		}
		for _, a := range byProducer[h.ProducerID] {
			if h.BaseOffset >= a.FirstOffset && h.BaseOffset < a.LastOffset {
				out = append(out, b)
				break
			}
		}
	}
	return out
}

// batchSpan is one record batch's offsets and bytes in a read.
type batchSpan struct {
	base, last int64
	start, end int // byte range in the read
}

var errShortBatch = errors.New("share: truncated record batch")

// spans splits read bytes into batches by their headers (base offset,
// length, last offset delta). A truncated tail is dropped.
func spans(b []byte) ([]batchSpan, error) {
	var out []batchSpan
	for pos := 0; pos+61 <= len(b); {
		base := int64(binary.BigEndian.Uint64(b[pos:]))
		length := int(int32(binary.BigEndian.Uint32(b[pos+8:])))
		if length < 49 || pos+12+length > len(b) {
			if len(out) == 0 {
				return nil, errShortBatch
			}
			break
		}
		delta := int64(int32(binary.BigEndian.Uint32(b[pos+23:])))
		out = append(out, batchSpan{base: base, last: base + delta, start: pos, end: pos + 12 + length})
		pos += 12 + length
	}
	return out, nil
}

// Lag returns, for each share-partition of group this node leads now (in
// the leader epoch it read the state in), its start offset, in-flight
// counts and lag (records at or above the start offset, below the high
// watermark or, for a read_committed group, the last stable offset, not
// yet acknowledged or archived). A share-partition kept
// from an earlier leadership is left out: its state may be stale.
func (m *Manager) Lag(group string) []PartitionLag {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []PartitionLag
	for k, sp := range m.mu.parts {
		if k.group != group {
			continue
		}
		rep, err := m.leaders.Leader(k.topic, k.partition)
		if err != nil || rep.LeaderEpoch() != sp.leaderEpoch {
			continue
		}
		pl := PartitionLag{Topic: k.topic, Partition: k.partition, StartOffset: sp.st.Start()}
		var done int
		pl.Acquired, pl.Available, done = sp.st.Counts()
		pl.InFlight = pl.Acquired + pl.Available + done
		pl.Lag = m.lag(k.group, rep, sp.st)
		out = append(out, pl)
	}
	slices.SortFunc(out, func(a, b PartitionLag) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// PartitionLag is one share-partition's position for the CLI and
// DescribeShareGroupOffsets. InFlight counts the records the
// share-partition tracks from its start offset on (Kafka's
// InFlightMessageCount): Acquired (held by a member now), Available
// (released, or their lock expired) and those acknowledged or archived
// that the start offset has not passed yet.
type PartitionLag struct {
	Topic                         string
	Partition                     int32
	StartOffset                   int64
	InFlight, Acquired, Available int
	Lag                           int64
}

// expireAll expires locks of every share-partition at nowMs.
func (m *Manager) expireAll(nowMs int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	for _, sp := range m.mu.parts {
		if sp.st.ExpireLocks(nowMs) {
			changed = true
		}
	}
	if changed {
		m.wakeLocked()
	}
}

// nextExpiry is the earliest lock deadline over every share-partition.
func (m *Manager) nextExpiry() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var best int64
	found := false
	for _, sp := range m.mu.parts {
		if d, ok := sp.st.NextLockExpiry(); ok && (!found || d < best) {
			best, found = d, true
		}
	}
	return time.UnixMilli(best), found
}

// lagEnd is where group's lag on rep's partition counts to: the high
// watermark, or for a read_committed group (share.isolation.level) the
// last stable offset, the end of what its fetches may deliver now (a
// record of an open transaction is no lag until it commits).
func (m *Manager) lagEnd(group string, rep *partition.Replica) int64 {
	end := rep.HighWatermark()
	if m.cfg.group(group).readCommitted {
		end = min(rep.LastStableOffset(), end)
	}
	return end
}

// lag counts st's records at or above its start offset, below lagEnd,
// neither acknowledged nor archived. REQUIRES: m.mu held.
func (m *Manager) lag(group string, rep *partition.Replica, st *Partition) int64 {
	end := m.lagEnd(group, rep)
	return max(end-st.Start()-int64(st.DoneBelow(end)), 0)
}

// lagEndOf is lagEnd of topic-p when this node leads it.
func (m *Manager) lagEndOf(group, topic string, p int32) (int64, bool) {
	rep, err := m.leaders.Leader(topic, p)
	if err != nil {
		return 0, false
	}
	return m.lagEnd(group, rep), true
}

// doneCount is the records of s at or above its start offset and below
// end that are acknowledged or archived.
func doneCount(s *Snapshot, end int64) int64 {
	var n int64
	for _, b := range s.Batches {
		if b.State == Acknowledged || b.State == Archived {
			if last := min(b.Last, end-1); last >= max(b.First, s.StartOffset) {
				n += last - max(b.First, s.StartOffset) + 1
			}
		}
	}
	return n
}
