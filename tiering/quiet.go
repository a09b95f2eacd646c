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
//   - and its reconcile is not due: the loop lists each partition's bucket
//     prefix every ReconcileEvery passes, each partition in its own phase
//     (reconcilePhase), so that a pass lists a share of them, not all.
// A visit that failed (the bucket down, an upload or delete refused) is not
// remembered: the next pass visits again, as before. A visit's own changes
// (an upload, a deletion) change the generations it read before it, so the
// pass after it visits again and remembers that one.

// visitInputs is what a visit's work depends on, read before it.
type visitInputs struct {
	logGen, remoteGen uint64
	lso               int64 // leaders only: what is uploaded is below it
	epoch             int32
	leader            bool
	cfg               *config.TopicConfig
}

// visitMemo is a settled visit: its inputs, and when time-based retention
// can first delete something (zero: never, with these inputs).
type visitMemo struct {
	in   visitInputs
	due  time.Time
	seen uint64 // the last pass that looked at the partition
}

// quietSet holds the settled visits, by replica.
type quietSet struct {
	mu sync.Mutex
	m  map[*partition.Replica]*visitMemo
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

// passOver reports whether pass n may pass rep over, its inputs being in;
// either way it records that pass n looked at it.
func (m *Manager) passOver(rep *partition.Replica, in visitInputs, n uint64) bool {
	m.quiet.mu.Lock()
	defer m.quiet.mu.Unlock()
	memo := m.quiet.m[rep]
	if memo == nil {
		return false
	}
	memo.seen = n
	if memo.in != in || (!memo.due.IsZero() && !m.now().Before(memo.due)) {
		delete(m.quiet.m, rep)
		return false
	}
	return true
}

// settled remembers a visit of rep at pass n that did all it had to, with
// the inputs read before it and its retention due time. A compacted topic
// is never remembered: its cleaning has timings of its own.
func (m *Manager) settled(rep *partition.Replica, in visitInputs, due time.Time, n uint64) {
	if strings.Contains(in.cfg.String(config.CleanupPolicy), "compact") {
		return
	}
	m.quiet.mu.Lock()
	defer m.quiet.mu.Unlock()
	if m.quiet.m == nil {
		m.quiet.m = map[*partition.Replica]*visitMemo{}
	}
	m.quiet.m[rep] = &visitMemo{in: in, due: due, seen: n}
}

// forgetUnseen drops the visits of replicas pass n did not look at (gone,
// or no longer tiered).
func (m *Manager) forgetUnseen(n uint64) {
	m.quiet.mu.Lock()
	defer m.quiet.mu.Unlock()
	for rep, memo := range m.quiet.m {
		if memo.seen != n {
			delete(m.quiet.m, rep)
		}
	}
}

// reconcilePhase reports whether the loop's pass n lists the partition's
// bucket prefix: every ReconcileEvery passes, in a phase of the
// partition's own, so that each pass lists about one partition in
// ReconcileEvery rather than every partition in one pass.
func (m *Manager) reconcilePhase(n uint64, id controlplane.TopicID, p int32) bool {
	every := uint64(m.cfg.ReconcileEvery)
	return (n+uint64(binary.BigEndian.Uint32(id[:4]))+uint64(uint32(p)))%every == 0
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
