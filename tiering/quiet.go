package tiering

import (
	"encoding/binary"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
)

// A pass visits a partition only when its visit could do something: at
// 10,000 partitions a visit of each one every Interval, finding nothing to
// do, was most of an idle node's CPU (issue 23). A visit that ended with
// nothing failed is remembered with what it read (visitInputs); a later
// pass passes the partition over while
//   - its log's state (segment.Log.StateGen), its remote records, log start
//     record and quarantine entries (controlplane.RemoteLog.PartitionGen),
//     its last stable offset, leader epoch, role and config are the same,
//   - no time-based retention of its local or remote segments can have
//     come due (retentionDue),
//   - no restore from quarantine is asked for it, its topic is not
//     compacted,
//   - and its reconcile is not due (reconcileDue).
// A visit that failed (the bucket down, an upload or delete refused) is not
// remembered: the next pass visits again, as before. A visit's own changes
// (an upload, a deletion) change the generations it read before it, so the
// pass after it visits again and remembers that one.
//
// The loop lists each partition's bucket prefix for orphans every
// ReconcileEvery passes, each partition in a phase of its own, so that a
// pass lists a share of them, not all; and once a partition's inputs have
// not changed for longer than the orphan grace and two such rounds, only
// every quietReconcileEvery rounds. Orphans come from uploads and deletes
// cut off (a crash, a change of leader), each of which changes the
// partition's remote records or its leader epoch (an upload starts with
// its CopyStarted record), and are removed once older than the grace: the
// rounds after a change find them. Listing every
// partition's prefix every minute was 10,000 LIST requests a minute at
// 10,000 partitions, idle or not.

// quietReconcileEvery is how many reconcile rounds (ReconcileEvery passes
// each) a partition quiet for longer than the orphan grace waits between
// listings: about an hour at the defaults (5 s passes, rounds of 12). It
// stays as a safety net, for an object put without a record the partition
// could see (a writer that outlived its record's removal by more than the
// grace).
const quietReconcileEvery = 60

// visitInputs is what a visit's work depends on, read before it.
type visitInputs struct {
	logGen, remoteGen uint64
	lso               int64 // leaders only: what is uploaded is below it
	epoch             int32
	leader            bool
	cfg               *config.TopicConfig
}

// visitMemo is what the passes know of one partition: the inputs the last
// pass read, whether a visit with those inputs settled and when
// time-based retention can first delete something then (zero: never, with
// these inputs), and when the inputs last changed.
type visitMemo struct {
	in        visitInputs
	settled   bool
	recent    bool // as look last found it
	due       time.Time
	changedAt time.Time
	seen      uint64 // the last pass that looked at the partition
}

// quietSet holds the memos, by replica, and what the last walk left.
type quietSet struct {
	mu   sync.Mutex
	m    map[*partition.Replica]*visitMemo
	walk walkState
}

// inputs reads what a visit of rep (of topic id) depends on.
func (m *Manager) inputs(rep *partition.Replica, id controlplane.TopicID, leader bool) visitInputs {
	in := visitInputs{logGen: rep.Log().StateGen(), remoteGen: m.meta.PartitionGen(id, rep.Partition()),
		epoch: rep.LeaderEpoch(), leader: leader, cfg: rep.Config()}
	if leader {
		in.lso = rep.LastStableOffset()
	}
	return in
}

// look records that pass n looked at rep, its inputs being in, and
// reports whether the pass may pass it over (quiet) and whether its inputs
// changed within the orphan grace and two reconcile rounds (recent; a
// partition first seen counts as changed, one with no remote record ever
// in the cache never does).
func (m *Manager) look(rep *partition.Replica, in visitInputs, n uint64) (quiet, recent bool) {
	now := m.now()
	m.quiet.mu.Lock()
	defer m.quiet.mu.Unlock()
	if m.quiet.m == nil {
		m.quiet.m = map[*partition.Replica]*visitMemo{}
	}
	memo := m.quiet.m[rep]
	if memo == nil {
		memo = &visitMemo{in: in, changedAt: now}
		m.quiet.m[rep] = memo
	}
	memo.seen = n
	if memo.in != in {
		memo.in, memo.settled, memo.changedAt = in, false, now
	}
	quiet = memo.settled && (memo.due.IsZero() || now.Before(memo.due))
	// A partition the remote metadata has never had a record of (its
	// generation 0) has had no upload to cut off: right after a creation
	// or a node's start, 10,000 new partitions were otherwise all listed
	// each round for the grace and two rounds.
	round := time.Duration(m.cfg.ReconcileEvery) * m.cfg.Interval
	recent = in.remoteGen != 0 && now.Sub(memo.changedAt) < m.cfg.OrphanGrace+2*round
	memo.recent = recent
	return quiet, recent
}

// settled records that a visit of rep with the inputs in did all it had
// to, and when time-based retention can next delete something. Nothing is
// recorded when the inputs changed since (the next pass visits again), nor
// for a compacted topic: its cleaning has timings of its own.
func (m *Manager) settled(rep *partition.Replica, in visitInputs, due time.Time) {
	if strings.Contains(in.cfg.String(config.CleanupPolicy), "compact") {
		return
	}
	m.quiet.mu.Lock()
	defer m.quiet.mu.Unlock()
	if memo := m.quiet.m[rep]; memo != nil && memo.in == in {
		memo.settled, memo.due = true, due
	}
}

// world is what the visits of a pass read that the process counts as a
// whole: the logs' states, the replicas' high watermarks, roles, epochs and
// configs, the remote metadata cache and the control plane's cache. While
// it holds from one walk to the next, no partition's inputs have changed.
type world struct {
	logs, replicas, remote, store uint64
}

func (m *Manager) readWorld() world {
	return world{logs: segment.StateChanges(), replicas: partition.ReplicaChanges(),
		remote: m.meta.Gen(), store: m.cfg.Store.Gen()}
}

// endWalk ends pass n's walk over reps, which read w before it: it drops
// the memos of replicas the walk did not look at (gone, or no longer
// tiered) and records whether the next passes may skip the walk
// (skipWalk).
func (m *Manager) endWalk(n uint64, w world, reps []*partition.Replica) {
	m.quiet.mu.Lock()
	defer m.quiet.mu.Unlock()
	quiet, first := true, time.Time{}
	for rep, memo := range m.quiet.m {
		if memo.seen != n {
			delete(m.quiet.m, rep)
			continue
		}
		quiet = quiet && memo.settled && !memo.recent
		if !memo.due.IsZero() && (first.IsZero() || memo.due.Before(first)) {
			first = memo.due
		}
	}
	m.quiet.walk = walkState{ok: quiet, world: w, reps: len(reps), due: first}
}

// skipWalk reports whether the loop's pass n may skip the walk over the
// replicas altogether: the last walk passed over or settled every one, none
// changed recently, nothing the visits read has changed since (world, the
// same replicas), no retention has come due and n does not start a
// reconcile round (those always walk: the quiet partitions' listings are
// due there, and a change that no count of world covers waits for one
// round at most). A replica opened or closed comes with a change of the
// control plane's cache and of its role; the count of replicas is checked
// as well. At 10,000 partitions the walk alone, finding every
// partition quiet, was a third of an idle node's CPU.
func (m *Manager) skipWalk(n uint64, w world, reps []*partition.Replica) bool {
	m.quiet.mu.Lock()
	defer m.quiet.mu.Unlock()
	last := m.quiet.walk
	if !last.ok || n%uint64(m.cfg.ReconcileEvery) == 0 || last.world != w || last.reps != len(reps) {
		return false
	}
	return last.due.IsZero() || m.now().Before(last.due)
}

// walkState is what the last walk left for skipWalk.
type walkState struct {
	ok    bool // every replica passed over or settled, none recent
	world world
	reps  int       // how many replicas it walked over
	due   time.Time // the first retention due of any replica, zero none
}

// reconcileDue reports whether the loop's pass n lists the partition's
// bucket prefix: every ReconcileEvery passes while it changed recently
// (look), in a phase of the partition's own, so that each pass lists its
// share of them rather than all in one pass; once it is quiet, at the first
// pass of every quietReconcileEvery-th round (a pass that always walks,
// skipWalk), also in a phase of its own.
func (m *Manager) reconcileDue(n uint64, id controlplane.TopicID, p int32, recent bool) bool {
	every := uint64(m.cfg.ReconcileEvery)
	h := uint64(binary.BigEndian.Uint32(id[:4])) + uint64(uint32(p))
	if recent {
		return (n+h)%every == 0
	}
	return n%every == 0 && (n/every+h)%quietReconcileEvery == 0
}

// retentionDue is the first time at which retention.ms or
// local.retention.ms can delete one of the local segments or remote
// records (their max timestamps), as RetentionPlan and RemoteRetentionPlan
// judge it (a segment goes once now - max timestamp > the limit); zero
// when none can. Size-based retention depends on the inputs alone.
func retentionDue(local []segment.SegmentInfo, remote []controlplane.RemoteSegment, tc *config.TopicConfig) time.Time {
	limit := int64(-1)
	for _, ms := range []int64{tc.Int64(config.RetentionMs), tc.LocalRetentionMs()} {
		if ms >= 0 && (limit < 0 || ms < limit) {
			limit = ms
		}
	}
	if limit < 0 {
		return time.Time{}
	}
	first := int64(math.MaxInt64)
	for _, s := range local {
		if !s.Active && s.MaxTimestamp >= 0 {
			first = min(first, s.MaxTimestamp)
		}
	}
	for _, r := range remote {
		if r.MaxTimestamp >= 0 {
			first = min(first, r.MaxTimestamp)
		}
	}
	if first == math.MaxInt64 || first > math.MaxInt64-limit-1 {
		return time.Time{}
	}
	return time.UnixMilli(first + limit + 1)
}
