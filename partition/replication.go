package partition

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/invariants"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/segment/vfs"
)

// ErrNotEnoughReplicasAfterAppend: an acks=all write was appended, but the
// ISR shrank below min.insync.replicas before it was replicated
// (NOT_ENOUGH_REPLICAS_AFTER_APPEND).
var ErrNotEnoughReplicasAfterAppend = errors.New("partition: ISR shrank below min.insync.replicas after the append")

// followerState is what a leader knows of one follower, from its fetches.
type followerState struct {
	leo              int64     // the follower's log end offset (its fetch offset)
	lastFetch        time.Time // when it last fetched
	lastCaughtUp     time.Time // the last time it had everything the leader had
	lastFetchLeaderL int64     // the leader's LEO at its previous fetch
	logStart         int64     // the log start its last fetch carried; -1 unknown
	// outUnfetched: a committed ISR took the follower out and it has not
	// fetched since. It is re-admitted only at a fetch made after that
	// (ProposeISRChange), as Kafka expands the ISR at the fetch that
	// catches up: the fetches from before may be those of a process that
	// has since been killed.
	outUnfetched bool
	// live is the fetch session of the follower's latest fetch, when it
	// fetched in one (FollowerFetchWatched), and liveLEO the leader's log
	// end at that fetch when the follower had all of it (-1 otherwise).
	// While the log end stays there, the session's later fetches skip the
	// partition (nothing changed) and each counts as a fetch that found
	// the follower caught up (caughtUp); the first append settles that
	// into lastCaughtUp.
	live    *Watcher
	liveLEO int64
}

// settle records in lastCaughtUp the session's fetches that found the
// follower caught up without visiting the partition, before the leader's
// log end moves past liveLEO. REQUIRES: the replica's mu held.
func (f *followerState) settle() {
	if f.live == nil || f.liveLEO < 0 {
		return
	}
	if t := f.live.LastFetch(); t.After(f.lastCaughtUp) {
		f.lastCaughtUp = t
	}
	f.liveLEO = -1
}

// fetchedAt is when the follower last fetched: its last visited fetch, or
// a later fetch of its session that skipped this partition.
// REQUIRES: the replica's mu held.
func (f *followerState) fetchedAt() time.Time {
	if f.live != nil {
		if lf := f.live.LastFetch(); lf.After(f.lastFetch) {
			return lf
		}
	}
	return f.lastFetch
}

// caughtUp is the last time the follower had everything the leader had,
// the leader's log end being leo now: lastCaughtUp, or the latest fetch of
// its session when nothing was appended since its last visited fetch
// found it caught up. REQUIRES: the replica's mu held.
func (f *followerState) caughtUp(leo int64) time.Time {
	t := f.lastCaughtUp
	if f.live != nil && f.liveLEO >= 0 && f.liveLEO == leo {
		if lf := f.live.LastFetch(); lf.After(t) {
			t = lf
		}
	}
	return t
}

// SetAssignment records the partition's replicas and ISR as the control
// plane has them, and this node's id, unversioned: it is always applied
// (SetAssignmentAt with partition epoch -1).
func (r *Replica) SetAssignment(self int32, replicas, isr []int32) {
	r.SetAssignmentAt(self, replicas, isr, -1)
}

// SetAssignmentAt records the partition's replicas and ISR as the control
// plane has them at partitionEpoch (the record's PartitionEpoch, bumped by
// every change), and this node's id. A state older than the newest one
// applied (a reconcile that read the record before this replica's own ISR
// change was committed, EndISRChange) is ignored, as Kafka's leader
// ignores a stale partition epoch; -1 is always applied. The leader
// recomputes its high watermark over the new ISR; followers it no longer
// has are forgotten. acks=all waiters are woken when the ISR falls below
// min.insync.replicas: they fail with ErrNotEnoughReplicasAfterAppend.
func (r *Replica) SetAssignmentAt(self int32, replicas, isr []int32, partitionEpoch int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if partitionEpoch >= 0 && partitionEpoch < r.mu.partitionEpoch {
		return
	}
	if partitionEpoch >= 0 {
		r.mu.partitionEpoch = partitionEpoch
	}
	if r.mu.pendingISR != nil && partitionEpoch > r.mu.pendingBase {
		r.mu.pendingISR = nil // the record moved past the proposal's base: its outcome is in it
	}
	r.mu.self = self
	r.mu.replicas = slices.Clone(replicas)
	r.installISRLocked(isr)
	if r.mu.followers == nil {
		r.mu.followers = map[int32]*followerState{}
	}
	for id := range r.mu.followers {
		if !slices.Contains(replicas, id) {
			delete(r.mu.followers, id)
		}
	}
	r.notifyWatchers()
}

// installISRLocked makes isr the committed ISR, moves the high watermark
// and wakes the acks=all waiters if it fell below min.insync.replicas.
// REQUIRES: r.mu held.
func (r *Replica) installISRLocked(isr []int32) {
	wasBelow := r.isrBelowMinLocked()
	for _, id := range r.mu.isr {
		if f := r.mu.followers[id]; f != nil && !slices.Contains(isr, id) {
			f.outUnfetched = true
		}
	}
	r.mu.isr = slices.Clone(isr)
	r.notifyWatchers() // a follower taken out is re-admitted only at a fetch that visits it
	if r.isrBelowMinLocked() && !wasBelow {
		r.wakeLocked()
	}
	if r.mu.leader {
		r.maybeAdvanceHWLocked()
	}
}

// wakeLocked wakes every waiter on the high watermark (acks=all, long
// polls): they check their condition again. REQUIRES: r.mu held.
func (r *Replica) wakeLocked() {
	close(r.mu.hwChanged)
	r.mu.hwChanged = make(chan struct{})
	r.notifyWatchers()
}

// BeginISRChange records, on the leader at epoch, that isr is proposed to
// the control plane: from now until EndISRChange the high watermark is the
// smallest log end offset over the maximal ISR, the committed ISR and the
// proposed one together (Kafka's maximal ISR, KIP-497's AlterPartition):
// a joining member counts from the moment it is proposed, since the
// control plane may elect it as soon as the change commits, and a leaving
// one keeps counting until the shrink is committed. basePartitionEpoch is
// the partition epoch of the record the proposal is written over: when the
// answer is lost (a timeout), the proposal ends when SetAssignmentAt
// applies a newer record (the proposal's, or one that superseded it), or
// when ProposeISRChange finds it older than replica.lag.time.max.ms. It
// reports false, and records nothing, when the replica does not lead at
// epoch or a change is already pending.
func (r *Replica) BeginISRChange(epoch int32, isr []int32, basePartitionEpoch int32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.mu.leader || r.mu.leaderEpoch != epoch || r.mu.pendingISR != nil {
		return false
	}
	r.mu.pendingISR = slices.Clone(isr)
	r.mu.pendingBase, r.mu.pendingAt = basePartitionEpoch, r.now()
	return true
}

// EndISRChange ends the change BeginISRChange recorded. committed reports
// whether the control plane took it: then isr, the ISR as written at
// partitionEpoch, is installed at once (SetAssignmentAt ignores older
// states after it); otherwise the committed ISR stays as it was. Either
// way the high watermark is computed over the committed ISR again.
func (r *Replica) EndISRChange(committed bool, isr []int32, partitionEpoch int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.pendingISR = nil
	if committed && partitionEpoch >= r.mu.partitionEpoch {
		r.mu.partitionEpoch = partitionEpoch
		r.installISRLocked(isr)
	}
}

// maximalISRLocked is the committed ISR with the members of a pending
// proposal added (BeginISRChange). REQUIRES: r.mu held.
func (r *Replica) maximalISRLocked() []int32 {
	if r.mu.pendingISR == nil {
		return r.mu.isr
	}
	out := slices.Clone(r.mu.isr)
	for _, id := range r.mu.pendingISR {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// ISR returns the in-sync replicas as last set.
func (r *Replica) ISR() []int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.mu.isr)
}

// ISRSize is the number of in-sync replicas (1 before any assignment: the
// replica alone).
func (r *Replica) ISRSize() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.isr == nil {
		return 1
	}
	return len(r.mu.isr)
}

func (r *Replica) isrBelowMin() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.isrBelowMinLocked()
}

// isrBelowMinLocked: the committed ISR is smaller than min.insync.replicas.
// REQUIRES: r.mu held.
func (r *Replica) isrBelowMinLocked() bool {
	return r.mu.isr != nil && int64(len(r.mu.isr)) < r.mu.cfg.Int64(config.MinInsyncReplicas)
}

// signalAppendLocked wakes follower long polls waiting for new data.
// REQUIRES: r.mu held.
func (r *Replica) signalAppendLocked() {
	close(r.mu.leoChanged)
	r.mu.leoChanged = make(chan struct{})
	for _, f := range r.mu.followers {
		f.settle()
	}
	r.notifyWatchers()
}

// LEOChanged returns a channel closed at the next append (or role change):
// follower fetches wait on it, since they read past the high watermark.
func (r *Replica) LEOChanged() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.leoChanged
}

// maybeAdvanceHWLocked moves a leader's high watermark to the smallest log
// end offset over the maximal ISR (the committed ISR and a pending
// proposal's members, BeginISRChange), never backwards, and only while the
// committed ISR has at least min.insync.replicas members (KIP-966): a
// write is committed only once enough replicas hold it, and it is held by
// every replica the control plane may elect.
// REQUIRES: r.mu held.
func (r *Replica) maybeAdvanceHWLocked() {
	if !r.mu.leader {
		return
	}
	leo := r.log.LogEndOffset()
	if r.mu.isr == nil || r.mu.self < 0 {
		// No assignment yet: a replica alone.
		if leo > r.mu.hw {
			r.setHW(leo)
		}
		return
	}
	if int64(len(r.mu.isr)) < r.mu.cfg.Int64(config.MinInsyncReplicas) {
		return
	}
	hw := leo
	for _, id := range r.maximalISRLocked() {
		if id == r.mu.self {
			continue
		}
		f, ok := r.mu.followers[id]
		if !ok {
			return // an ISR member not heard from since this replica became leader
		}
		hw = min(hw, f.leo)
	}
	if hw > r.mu.hw {
		r.setHW(hw)
	}
}

// FollowerFetch records a follower's fetch at fetchOffset (its log end
// offset) on the leader, as Kafka's updateFollowerFetchState does: the
// follower is caught up when it has everything the leader has now, or had
// at its previous fetch. It returns the high watermark to send back.
//
// lastFetchedEpoch is the epoch of the follower's last batch (Fetch v12's
// LastFetchedEpoch, -1 when unknown). A follower that holds data of a newer
// epoch than this leader's proves the leader stale (a zombie): its fetch is
// refused and not counted, so a deposed leader can never advance its high
// watermark on a log that diverged from its own. A follower whose log has
// left this one (KIP-320: its last epoch ends here before its fetch offset,
// or this log never had that epoch) gets a *DivergedError naming where to
// cut; that fetch is not counted either (no LEO, no catch-up time, no high
// watermark move). A last epoch that this log's history cannot place is
// segment.ErrOffsetOutOfRange, as Kafka answers it; a leader made by
// SetLeadership always places it (its own epoch is in its history).
func (r *Replica) FollowerFetch(id int32, fetchOffset int64, lastFetchedEpoch int32, now time.Time) (int64, error) {
	return r.FollowerFetchWatched(id, fetchOffset, lastFetchedEpoch, now, nil)
}

// FollowerFetchWatched is FollowerFetch for a fetch of the incremental
// fetch session whose Watcher is w (registered with Watch before): while
// the follower stays caught up and nothing is appended, the session's
// later fetches, which skip this partition, count as fetches that found
// it caught up (Watcher.Fetched). w may be nil (no session).
func (r *Replica) FollowerFetchWatched(id int32, fetchOffset int64, lastFetchedEpoch int32, now time.Time, w *Watcher) (int64, error) {
	hw, expandable, err := r.followerFetch(id, fetchOffset, lastFetchedEpoch, now, w)
	if expandable && r.onExpandable != nil {
		r.onExpandable()
	}
	return hw, err
}

// followerFetch is FollowerFetch under r.mu; expandable reports that the
// fetch made the follower eligible to join the ISR (its log end reached the
// high watermark and the start of this leader's epoch, Kafka's
// isFollowerInSync), for Options.OnISRExpandable.
func (r *Replica) followerFetch(id int32, fetchOffset int64, lastFetchedEpoch int32, now time.Time, w *Watcher) (int64, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hw, err := r.followerFetchLocked(id, fetchOffset, lastFetchedEpoch, now, w)
	if err != nil || slices.Contains(r.maximalISRLocked(), id) || r.mu.self < 0 {
		return hw, false, err
	}
	f := r.mu.followers[id]
	return hw, f.leo >= r.mu.hw && f.leo >= r.epochStartLocked(), nil
}

// epochStartLocked is where this leader's epoch starts in its log (0 when
// its history does not have it). REQUIRES: r.mu held.
func (r *Replica) epochStartLocked() int64 {
	if last, ok := r.log.LatestEpochEntry(); ok && last.Epoch == r.mu.leaderEpoch {
		return last.StartOffset
	}
	return 0
}

// followerFetchLocked is FollowerFetch's bookkeeping. REQUIRES: r.mu held.
func (r *Replica) followerFetchLocked(id int32, fetchOffset int64, lastFetchedEpoch int32, now time.Time, w *Watcher) (int64, error) {
	if !r.mu.leader {
		return -1, ErrNotLeader
	}
	if lastFetchedEpoch > r.mu.leaderEpoch {
		return -1, fmt.Errorf("%w: follower %d has epoch %d data, this leader is at epoch %d", ErrNotLeader, id, lastFetchedEpoch, r.mu.leaderEpoch)
	}
	if r.mu.self >= 0 && !slices.Contains(r.mu.replicas, id) {
		return -1, fmt.Errorf("%w: broker %d is not a replica of %s-%d", ErrUnknownReplica, id, r.topic, r.partition)
	}
	if lastFetchedEpoch >= 0 {
		epoch, end := r.log.EndOffsetForEpoch(lastFetchedEpoch)
		if epoch < 0 || end < 0 {
			// Kafka's answer (Partition.readRecords) for a last epoch the
			// history cannot place. A leader's history holds its own epoch
			// from SetLeadership on (the only way to lead), so this is a
			// guard: no epoch at or below the leader's is unplaceable.
			return -1, fmt.Errorf("%w: cannot place follower %d's last fetched epoch %d in this leader's history (epoch %d)",
				segment.ErrOffsetOutOfRange, id, lastFetchedEpoch, r.mu.leaderEpoch)
		}
		if followerDiverged(lastFetchedEpoch, fetchOffset, epoch, end) {
			return -1, &DivergedError{Follower: id, LastFetchedEpoch: lastFetchedEpoch, FetchOffset: fetchOffset, Epoch: epoch, EndOffset: end}
		}
	}
	leo := r.log.LogEndOffset()
	if fetchOffset > leo {
		// The follower claims offsets this leader does not have: it is not
		// caught up, and its log end is no replica of this log's. Kafka
		// answers OFFSET_OUT_OF_RANGE and moves none of its state.
		return -1, fmt.Errorf("%w: follower %d fetches at %d, past this leader's log end %d",
			segment.ErrOffsetOutOfRange, id, fetchOffset, leo)
	}
	if r.mu.followers == nil {
		r.mu.followers = map[int32]*followerState{}
	}
	f, ok := r.mu.followers[id]
	if !ok {
		f = &followerState{lastFetchLeaderL: -1, logStart: -1, liveLEO: -1}
		if slices.Contains(r.mu.isr, id) {
			// Kafka's makeLeader: an ISR member counts as caught up at
			// the election, or a new leader could drop it at its first
			// ISR check, before it had a chance to catch up.
			f.lastCaughtUp = r.mu.leaderAt
		}
		r.mu.followers[id] = f
	}
	switch {
	case fetchOffset == leo:
		f.lastCaughtUp = now
	case f.lastFetchLeaderL >= 0 && fetchOffset >= f.lastFetchLeaderL && f.lastFetch.After(f.lastCaughtUp):
		f.lastCaughtUp = f.lastFetch
	}
	f.live, f.liveLEO = w, -1
	if w != nil && fetchOffset == leo {
		f.liveLEO = leo
	}
	f.leo = fetchOffset
	f.lastFetch = now
	f.lastFetchLeaderL = leo
	f.outUnfetched = false
	r.maybeAdvanceHWLocked()
	return r.mu.hw, nil
}

// DivergedError is a follower fetch whose log has left the leader's
// (KIP-320): Epoch is the leader's largest epoch at or below the follower's
// LastFetchedEpoch and EndOffset where that epoch ends in the leader's log.
// The fetch path answers it as the partition's DivergingEpoch (error NONE,
// no records); the follower cuts its divergent tail there
// (Replica.TruncateDivergent) and fetches from its new log end.
//
// It unwraps to ErrNotLeader, so that a path that cannot carry
// DivergingEpoch answers NOT_LEADER_OR_FOLLOWER, as before KIP-320, and
// the follower then asks OffsetForLeaderEpoch.
type DivergedError struct {
	Follower         int32
	LastFetchedEpoch int32
	FetchOffset      int64
	Epoch            int32
	EndOffset        int64
}

func (e *DivergedError) Error() string {
	return fmt.Sprintf("partition: follower %d diverged (epoch %d up to %d; the leader's epoch %d ends at %d)",
		e.Follower, e.LastFetchedEpoch, e.FetchOffset, e.Epoch, e.EndOffset)
}

// Unwrap returns ErrNotLeader (see DivergedError).
func (e *DivergedError) Unwrap() error { return ErrNotLeader }

// followerDiverged is the leader's check of a follower fetch (Kafka's
// Partition.readRecords with a lastFetchedEpoch): the follower fetching at
// fetchOffset, whose last batch is of epoch lastFetchedEpoch (>= 0, and not
// above the leader's epoch), has diverged when this log's largest epoch at
// or below lastFetchedEpoch, epoch, is smaller, or ends (at end) before
// fetchOffset. (epoch, end) is the log's EndOffsetForEpoch(lastFetchedEpoch),
// the DivergingEpoch to answer. The leader's own epoch is in its history
// from its election (SetLeadership), so an epoch it has not written in yet
// ends at its log end, as in Kafka.
func followerDiverged(lastFetchedEpoch int32, fetchOffset int64, epoch int32, end int64) bool {
	return epoch < lastFetchedEpoch || end < fetchOffset
}

// ErrUnknownReplica: a fetch with a replica id that is not assigned the
// partition (NOT_LEADER_OR_FOLLOWER for the fetcher to refresh its view).
var ErrUnknownReplica = errors.New("partition: not an assigned replica")

// ISRChange is a leader's proposal to the control plane.
type ISRChange struct {
	Shrink []int32 // followers that lagged past replica.lag.time.max.ms
	Expand []int32 // followers that caught up to the high watermark
}

// ProposeISRChange decides, on the leader, which followers leave the ISR
// (not caught up for longer than lagMax) and which join it (their log end
// offset reached the high watermark and the start of the current leader
// epoch, at a fetch made after a committed ISR last took them out). It is a pure function of the recorded fetch state and now; the
// caller commits the result to the control plane by compare-and-set before
// it counts (SetAssignment then installs it).
func (r *Replica) ProposeISRChange(now time.Time, lagMax time.Duration) ISRChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ch ISRChange
	if r.mu.pendingISR != nil && now.Sub(r.mu.pendingAt) > lagMax {
		// Its answer was lost and no newer record came: had it committed,
		// the control plane's watch would have brought it long ago.
		r.mu.pendingISR = nil
		r.maybeAdvanceHWLocked()
	}
	if !r.mu.leader || r.mu.self < 0 || r.mu.pendingISR != nil {
		return ch
	}
	epochStart := int64(-1) // read when a follower outside the ISR needs it
	leo := r.log.LogEndOffset()
	for _, id := range r.mu.replicas {
		if id == r.mu.self {
			continue
		}
		f, heard := r.mu.followers[id]
		in := slices.Contains(r.mu.isr, id)
		switch {
		case in && heard && now.Sub(f.caughtUp(leo)) > lagMax:
			ch.Shrink = append(ch.Shrink, id)
		case in && !heard && now.Sub(r.mu.leaderAt) > lagMax:
			ch.Shrink = append(ch.Shrink, id)
		case !in && heard && !f.outUnfetched && f.leo >= r.mu.hw && now.Sub(f.caughtUp(leo)) <= lagMax:
			if epochStart < 0 {
				epochStart = r.epochStartLocked()
			}
			if f.leo >= epochStart {
				ch.Expand = append(ch.Expand, id)
			}
		}
	}
	return ch
}

// applyPendingBelow applies to producer state the batches of the follower
// append in progress (r.pending) that end at or below offset and were not
// applied yet. appendMu is held.
func (r *Replica) applyPendingBelow(offset int64) {
	for i := range r.pending {
		c := &r.pending[i]
		if next := c.Header.NextOffset(); next > r.pendingNext && next <= offset {
			r.applyBatchLocked(&c.Header, c.Raw)
			r.pendingNext = next
		}
	}
}

// startAtLeaderBatchLocked handles a follower whose log is empty and starts
// inside the leader's first batch (it restarted at a log start that
// DeleteRecords put in the middle of a batch): the leader can only send the
// whole batch, which starts below this log's end, so the log restarts at
// the batch's base offset, as Kafka's follower does. bs are the batches of
// records that parse whole (batch.ParseAll); when the first does not, its
// header alone decides, and AppendAsFollower reports the batch.
// REQUIRES: appendMu.
func (r *Replica) startAtLeaderBatchLocked(bs []batch.Checked, records []byte) error {
	var h batch.Header
	if len(bs) > 0 {
		h = bs[0].Header
	} else {
		var err error
		if h, err = batch.ParseHeader(records); err != nil {
			return nil // AppendAsFollower reports it
		}
	}
	leo := r.log.LogEndOffset()
	if leo != r.log.LogStartOffset() || h.BaseOffset >= leo || h.LastOffset() < leo {
		return nil
	}
	if err := r.log.ResetTo(h.BaseOffset, r.log.Epochs()); err != nil {
		return err
	}
	r.ckpts.changed() // a new log start under the same high watermark may change the entry
	r.logger.Info("empty follower log restarted at the leader's batch", "from", leo, "to", h.BaseOffset)
	return nil
}

// followerBatchesHint is the room a follower append makes for its parsed
// batches at first: a fetch answer with more grows the slice.
const followerBatchesHint = 8

// AppendFollower appends batches fetched from the leader, keeping their
// offsets and epochs, updates idempotent-producer state from them (so a new
// leader rejects the duplicates the old one accepted), and sets the
// follower's high watermark to min(leader's, own log end). A replica that
// leads refuses with ErrNotLeader and appends nothing: the answer is to a
// fetch sent before it took the role, and its log now starts its own epoch.
// Above the broker's disk_high_watermark (SetDiskFull) it refuses batches
// with ErrDiskFull, appending nothing.
func (r *Replica) AppendFollower(records []byte, leaderHW int64) error {
	r.appendMu.Lock()
	defer r.appendMu.Unlock()
	if r.IsLeader() {
		return ErrNotLeader
	}
	if len(records) > 0 && r.diskFull.Load() {
		// Past disk_high_watermark: as produce on a leader, refuse until
		// retention and tiering free space (the fetcher retries later).
		return ErrDiskFull
	}
	if len(records) > 0 {
		// Each header is parsed once, here, and handed down with its
		// batch to the log and to producer state.
		bs, perr := batch.ParseAll(make([]batch.Checked, 0, followerBatchesHint), records)
		if err := r.startAtLeaderBatchLocked(bs, records); err != nil {
			return err
		}
		// A roll inside this append snapshots producer state at the new
		// segment's base: onRoll applies the batches below it first.
		r.pending, r.pendingNext = bs, -1
		var err error
		if perr == nil {
			_, err = r.log.AppendCheckedAsFollower(bs)
		} else {
			// A malformed batch: the log reports it where its walk
			// reaches it (a gap before it first), writing nothing.
			_, err = r.log.AppendAsFollower(records)
		}
		if invariants.Enabled && perr == nil {
			r.checkHandedDown(bs)
		}
		// What landed is in producer state even when the append then
		// failed (a flush after the write).
		r.applyPendingBelow(r.log.LogEndOffset())
		r.pending = nil
		if ierr := r.writeAbortedLocked(); err == nil {
			err = ierr
		}
		if err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(records) > 0 {
		r.publishTxnStateLocked()
		r.signalAppendLocked()
	}
	if hw := min(leaderHW, r.log.LogEndOffset()); hw >= 0 && hw != r.mu.hw && !r.mu.leader {
		r.setHW(hw)
	}
	return nil
}

// TruncateTo drops every record at or after offset (a follower's divergent
// tail), with the producer state and the high watermark.
func (r *Replica) TruncateTo(offset int64) error {
	r.appendMu.Lock()
	defer r.appendMu.Unlock()
	return r.truncateLocked(offset)
}

// TruncateDivergent cuts a follower's divergent tail from the leader's
// answer for the follower's latest epoch requested: (leaderEpoch,
// leaderEnd), from OffsetForLeaderEpoch when the replica becomes follower,
// or from a fetch response's DivergingEpoch (KIP-320). TruncationPoint
// decides where, from this log's epoch history and end, never from its own
// high watermark. It returns the log end offset after the call (a cut
// inside a batch drops the whole batch, as Log.Truncate does): unchanged
// when there is nothing to cut, or when the log's latest epoch is no longer
// requested (the answer is about another log; the caller asks again). When
// there is nothing to cut and the leader's epoch is not the one requested,
// history entries with no batch after them (an epoch this replica assigned
// as leader and never wrote in) are dropped, as Kafka's truncateTo does, so
// that the next fetch carries the epoch of the log's last batch. A leader
// refuses with ErrNotLeader: its log is the reference.
func (r *Replica) TruncateDivergent(requested, leaderEpoch int32, leaderEnd int64) (int64, error) {
	r.appendMu.Lock()
	defer r.appendMu.Unlock()
	leo := r.log.LogEndOffset()
	if r.IsLeader() {
		return leo, ErrNotLeader
	}
	epochs := r.log.Epochs()
	if len(epochs) == 0 || epochs[len(epochs)-1].Epoch != requested {
		return leo, nil
	}
	to := TruncationPoint(epochs, leo, requested, leaderEpoch, leaderEnd)
	if to >= leo {
		if leaderEpoch != requested {
			// Nothing to cut, and the leader does not have our latest
			// epoch: if that entry has no batch here (this replica
			// assigned it as leader and lost the role before writing),
			// drop it, as Kafka's follower does at every truncation, or
			// it would fetch with an epoch no batch carries and be told
			// to diverge again and again (DropUnwrittenEpochs). An entry
			// the leader has (an empty log's epoch at its log start,
			// after ResetTo) is kept.
			if _, err := r.log.DropUnwrittenEpochs(); err != nil {
				return leo, err
			}
		}
		return leo, nil
	}
	err := r.truncateLocked(to)
	return r.log.LogEndOffset(), err
}

// truncateLocked is TruncateTo. REQUIRES: appendMu held.
func (r *Replica) truncateLocked(offset int64) error {
	if offset >= r.log.LogEndOffset() {
		return nil
	}
	before := r.log.LogEndOffset()
	if err := r.log.Truncate(offset); err != nil {
		return err
	}
	// A cut inside a batch drops the whole batch: the log may now end
	// below offset, and the high watermark must not be left past its end.
	end := r.log.LogEndOffset()
	removed := false
	// The producer snapshots at or above the cut were taken of the cut
	// batches: a reopen after the log grows past them again would load
	// the state of the divergent tail (Kafka's truncateAndReload). Their
	// removal is made durable (a directory fsync) before any new batch at
	// those offsets can be: the background flusher fsyncs a rolled
	// segment's data before the directory, so a crash in between left a
	// snapshot of the cut batches beside the new ones, and the reopened
	// replica loaded it.
	for _, off := range listSnapshots(r.fs, r.dir) {
		if off >= end {
			if err := r.fs.Remove(snapshotName(r.dir, off)); err != nil && !errors.Is(err, os.ErrNotExist) {
				r.logger.Error("a producer snapshot above a truncation could not be removed", "offset", off, "cut", end, "err", err)
			}
			removed = true
		}
	}
	if removed {
		if err := vfs.SyncDir(r.fs, r.dir); err != nil {
			r.logger.Error("the removal of the producer snapshots above a truncation was not synced", "cut", end, "err", err)
		}
	}
	// Producer state is rebuilt from the newest snapshot below the cut and
	// the batches after it, as Kafka's truncateAndReload does: cutting a
	// marker reopens its transaction, which forgetting batches cannot do.
	if err := r.reloadProducersLocked(); err != nil {
		r.logger.Warn("producer state not rebuilt after a truncation; forgetting the cut batches instead", "cut", end, "err", err)
		r.producers.TruncateTo(end)
	}
	r.mu.Lock()
	if r.mu.hw > end {
		r.setHW(end)
	}
	r.resetTxnStateLocked(end)
	r.mu.Unlock()
	r.hwCutBelowCheckpoint()
	r.logger.Info("truncated divergent tail", "to", end, "asked", offset, "records", before-end)
	return nil
}

// reloadProducersLocked rebuilds producer state from the newest snapshot at
// or below the log end and the batches after it. REQUIRES: appendMu held.
func (r *Replica) reloadProducersLocked() error {
	ps, from, err := LoadLatestSnapshot(r.fs, r.dir, r.log.LogEndOffset())
	if err != nil {
		return err
	}
	done, aborted := r.txnDone, r.abortedPending
	r.txnDone, r.abortedPending = nil, nil
	err = r.replayProducers(ps, max(from, r.log.LogStartOffset()))
	// The completed transactions replayed are those below the cut, already
	// known and in the transaction index; only those noted before are kept.
	r.txnDone, r.abortedPending = done, aborted
	if err != nil {
		return err
	}
	r.removeExpired(ps)
	r.producers = ps
	return nil
}

// TruncationPoint decides where a new follower cuts its log, from the
// leader's answer to OffsetForLeaderEpoch for the follower's latest epoch
// (KIP-101, KIP-279): the end of the last epoch both logs share. It never
// uses the follower's own high watermark, which is how Kafka lost
// acknowledged writes before KIP-101.
func TruncationPoint(local []segment.EpochEntry, localLEO int64, requested, leaderEpoch int32, leaderEnd int64) int64 {
	if leaderEpoch < 0 || leaderEnd < 0 {
		return localLEO // the leader knows no epoch at or below ours: keep the log, fetch resolves it
	}
	if leaderEpoch == requested {
		return min(leaderEnd, localLEO)
	}
	// The leader's largest epoch at or below ours is smaller: our end of
	// that epoch is where the next larger local epoch starts.
	end := localLEO
	for _, e := range local {
		if e.Epoch > leaderEpoch {
			end = e.StartOffset
			break
		}
	}
	return min(leaderEnd, end)
}

// FollowerLogStart records the log start offset follower id sent with its
// fetch (Fetch v5+, after FollowerFetch counted it), for LowWatermark; a
// negative value (an older fetch version) leaves it unknown.
func (r *Replica) FollowerLogStart(id int32, logStart int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.mu.followers[id]; ok && logStart >= 0 {
		f.logStart = logStart
	}
}

// LowWatermark is Kafka's lowWatermarkIfLeader, what DeleteRecords waits
// on: the lowest log start offset among this leader's and those of the
// partition's replicas on brokers alive reports live. A live follower that
// has not fetched since this replica became leader, or whose fetches carry
// no log start, counts as -1: an acknowledged DeleteRecords must hold
// whichever live replica leads next. A replica on a dead broker does not
// count (Kafka's rule); it learns the log start from its leader's fetch
// answers when it returns. ErrNotLeader when this replica does not lead.
func (r *Replica) LowWatermark(alive func(id int32) bool) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.mu.leader {
		return -1, ErrNotLeader
	}
	low := r.log.LogStartOffset()
	if r.mu.self < 0 {
		return low, nil // no assignment: a replica alone
	}
	for _, id := range r.mu.replicas {
		if id == r.mu.self || !alive(id) {
			continue
		}
		f, ok := r.mu.followers[id]
		if !ok {
			return -1, nil
		}
		low = min(low, f.logStart)
	}
	return low, nil
}
