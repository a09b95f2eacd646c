package partition

import (
	"errors"
	"fmt"
	"os"

	"github.com/shale-io/shale/segment"
)

// ErrResetNotAhead: a remote bootstrap must move the replica's log forward,
// past its log end; a replica that already reaches the offset fetches it.
var ErrResetNotAhead = errors.New("partition: remote bootstrap offset is not past the log end")

// RemoteTail is what a follower takes from the remote tail of its
// partition instead of copying history (KIP-405): the remote segment
// ending just below Offset, its leader-epoch history and its producer-state
// snapshot.
type RemoteTail struct {
	// Offset is where the local log restarts: the end of the remote
	// segment plus one, an offset the leader holds locally.
	Offset int64
	// LogStart is the partition's log start on the leader (the remote log
	// start), reported by LogStartOffset until the tiering manager says
	// otherwise.
	LogStart int64
	// Epochs is the leader-epoch history of the data below Offset (the
	// remote segment's epochs object: from the leader's log start when it
	// uploaded the segment). The replica keeps it from LogStart on, so
	// that it places the epochs of every retained remote segment.
	Epochs []segment.EpochEntry
	// ProducerSnapshot is the producer-state snapshot uploaded with the
	// segment (Encode's format), the state after every batch below
	// Offset; nil when the segment has none (idempotence state then starts
	// empty, as for a producer never seen).
	ProducerSnapshot []byte
}

// ResetFromRemote restarts a follower's log, empty, at t.Offset, with the
// remote tail's epoch history and producer state, discarding every local
// record (all below t.Offset). Only a follower is reset, and only forward:
// t.Offset must be above the log end (ErrResetNotAhead), which is the case
// when the leader keeps only offsets from t.Offset on local disk and this
// replica's log ends below them.
//
// Crash safety: the snapshot decoded from t.ProducerSnapshot is written
// first, at t.Offset, then the log is reset (segment.Log.ResetTo). A crash
// before the reset completes reopens the old log (or an empty one), whose
// end is below t.Offset, so Open discards the new snapshot and rebuilds the
// old state; a crash after it reopens the log at t.Offset with that
// snapshot. Old snapshots are removed last.
func (r *Replica) ResetFromRemote(t RemoteTail) error {
	ps := NewProducerState()
	if t.ProducerSnapshot != nil {
		var err error
		if ps, err = DecodeProducerState(t.ProducerSnapshot); err != nil {
			return fmt.Errorf("remote producer snapshot: %w", err)
		}
	}
	r.appendMu.Lock()
	defer r.appendMu.Unlock()
	r.mu.Lock()
	leader, closed := r.mu.leader, r.mu.closed
	r.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case leader:
		return fmt.Errorf("%w: a leader is not reset from the remote tail", ErrNotLeader)
	case t.Offset <= r.log.LogEndOffset():
		return fmt.Errorf("%w: offset %d, log end %d", ErrResetNotAhead, t.Offset, r.log.LogEndOffset())
	}
	r.removeExpired(ps)
	// keep 0: the old log's snapshots stay until the reset has succeeded
	// (a refused or interrupted reset leaves that log with all of them).
	if err := ps.WriteSnapshot(r.fs, r.dir, t.Offset, 0); err != nil {
		return err
	}
	// The history of the remote data from the partition's log start (the
	// tail's epochs object holds it from the leader's log start at upload).
	epochs := epochsFrom(t.Epochs, min(t.LogStart, t.Offset))
	if err := r.log.ResetToWithHistory(t.Offset, epochs); err != nil {
		return err
	}
	r.ckpts.changed() // a new log start under the same high watermark may change the entry
	r.producers = ps
	for _, off := range listSnapshots(r.fs, r.dir) {
		if off < t.Offset {
			if err := r.fs.Remove(snapshotName(r.dir, off)); err != nil && !errors.Is(err, os.ErrNotExist) {
				r.logger.Warn("removing a snapshot of the discarded log", "offset", off, "err", err)
			}
		}
	}
	r.remote.Lock()
	r.remote.gen.Add(1)
	remoteChanges.Add(1)
	r.remote.state = RemoteState{LogStart: min(t.LogStart, t.Offset), CopiedNext: t.Offset}
	r.remote.known = true
	r.remote.Unlock()
	r.mu.Lock()
	r.setHW(t.Offset)
	r.mu.unreplicated = nil
	r.publishTxnStateLocked()
	r.signalAppendLocked()
	r.mu.Unlock()
	r.logger.Info("follower log restarted from the remote tail", "offset", t.Offset, "log_start", t.LogStart,
		"epochs", len(t.Epochs), "producers", ps.Len())
	return nil
}

// epochsFrom returns the history es (in offset order) as from start: the
// entries wholly before start dropped, the one in force at start moved
// to it. es is not modified.
func epochsFrom(es []segment.EpochEntry, start int64) []segment.EpochEntry {
	i := 0
	for i+1 < len(es) && es[i+1].StartOffset <= start {
		i++
	}
	out := append([]segment.EpochEntry(nil), es[i:]...)
	if len(out) > 0 && out[0].StartOffset < start {
		out[0].StartOffset = start
	}
	return out
}
