package replica

import (
	"errors"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/partition"
)

// The follower's decisions, as a state machine in the manner of
// etcd-io/raft's Step: partState.Step takes the time and what just
// happened to one followed partition and returns what the fetcher does
// next. It reads no clock and does no I/O; the fetcher (fetcher.go) does
// the requests, the appends and the truncations, reads the clock, and feeds
// the outcomes back. A round of the fetcher, per partition:
//
//	evRound            -> actBootstrap | actTruncate | actFetch | actNone
//	evBootstrapped     -> (as evRound, after the bootstrap) | actBackoff
//	evTruncated        -> (as evRound, after the check) | actBackoff
//	evSent             -> actNone (records LastFetchedEpoch)
//	evAnswer           -> actAppend | actCutDiverging | actNone | actBackoff
//	evAppended         -> actNone (maybe paused: disk full) | actBackoff
//	evCut              -> actNone | actBackoff
//
// evFollow (the control plane made this node a follower of a leader in an
// epoch) starts a partition over: check divergence before fetching.

// eventKind says what happened to a followed partition.
type eventKind uint8

const (
	// evFollow: the partition became a follower of a (new) leader or epoch.
	evFollow eventKind = iota + 1
	// evRound: a fetcher round starts.
	evRound
	// evBootstrapped: a bootstrap from the remote tail ended (err: nil,
	// errNotBehind or a failure).
	evBootstrapped
	// evTruncated: the OffsetForLeaderEpoch check and its cut ended (err).
	evTruncated
	// evSent: the partition went into a Fetch with LastFetchedEpoch epoch.
	evSent
	// evAnswer: the Fetch answer for the partition (code; diverging when
	// the answer carries a DivergingEpoch, KIP-320).
	evAnswer
	// evAppended: the follower append of the answer's batches ended (err).
	evAppended
	// evCut: the cut at a DivergingEpoch ended (err; cut: it removed a tail).
	evCut
)

// event is one input of partState.Step; only the fields of its kind are set.
type event struct {
	kind  eventKind
	err   error // evBootstrapped, evTruncated, evAppended, evCut
	epoch int32 // evSent: LastFetchedEpoch
	code  int16 // evAnswer: the partition's error code
	// evAnswer: the answer's DivergingEpoch, when it has one.
	diverging    bool
	divEpoch     int32
	divEndOffset int64
	cut          bool // evCut
}

// actionKind says what the fetcher does next for a partition.
type actionKind uint8

const (
	// actNone: nothing more this round.
	actNone actionKind = iota + 1
	// actBootstrap: rebuild from the remote tail, then Step evBootstrapped.
	actBootstrap
	// actTruncate: ask the leader OffsetForLeaderEpoch for the latest
	// local epoch and cut the divergent tail, then Step evTruncated.
	actTruncate
	// actFetch: put the partition into this round's Fetch, then Step evSent.
	actFetch
	// actAppend: append the answer's batches, then Step evAppended.
	actAppend
	// actCutDiverging: cut at the answer's DivergingEpoch (epoch and
	// endOffset, for LastFetchedEpoch fetchedEpoch), then Step evCut.
	actCutDiverging
	// actBackoff: the last step failed; the partition pauses for pause.
	// Log the failure at level. Nothing more this round.
	actBackoff
)

// action is partState.Step's answer.
type action struct {
	kind actionKind
	// actBackoff
	pause time.Duration
	level slog.Level
	// actCutDiverging
	fetchedEpoch, epoch int32
	endOffset           int64
}

// defaultRetryBackoff is FetchConfig.RetryBackoff's default.
const defaultRetryBackoff = 200 * time.Millisecond

// diskFullPause is how long a partition waits after an append refused
// above the node's disk_high_watermark (partition.ErrDiskFull).
const diskFullPause = time.Second

// partState is the replication state of one followed partition.
// REQUIRES: owned by the partition's fetcher goroutine; a new role replaces
// it whole (fetcher.set).
type partState struct {
	// backoff is the pause after a failed divergence check, a failed
	// append, a partition error or a DivergingEpoch that cut nothing
	// (FetchConfig.RetryBackoff).
	backoff time.Duration

	needTruncate bool // check divergence (OffsetForLeaderEpoch) before fetching
	// needBootstrap: the leader no longer holds this replica's log end
	// locally; rebuild from the remote tail (bootstrap.go).
	needBootstrap bool
	retry         bootstrapRetry // pacing of failed bootstraps
	pausedUntil   time.Time
	// fetchedEpoch is the LastFetchedEpoch of the Fetch in flight: the
	// epoch a DivergingEpoch in its answer is about.
	fetchedEpoch int32
}

// newPartState is the state of a partition that has just become a
// follower: it checks divergence before it fetches.
func newPartState(backoff time.Duration) partState {
	s := partState{backoff: backoff}
	s.Step(time.Time{}, event{kind: evFollow})
	return s
}

// Step applies ev at now and returns what to do next.
func (s *partState) Step(now time.Time, ev event) action {
	switch ev.kind {
	case evFollow:
		*s = partState{backoff: s.backoff, needTruncate: true}
		return action{kind: actNone}
	case evRound:
		return s.next(now)
	case evBootstrapped:
		switch {
		case ev.err == nil:
			s.needBootstrap, s.retry = false, bootstrapRetry{}
		case errors.Is(ev.err, errNotBehind):
			// Out of range for another reason: check divergence.
			s.needBootstrap, s.needTruncate, s.retry = false, true, bootstrapRetry{}
		default:
			pause, level := s.retry.failed(now)
			s.pausedUntil = now.Add(pause)
			return action{kind: actBackoff, pause: pause, level: level}
		}
		return s.next(now)
	case evTruncated:
		if ev.err != nil {
			return s.pause(now, slog.LevelDebug)
		}
		s.needTruncate = false
		return s.next(now)
	case evSent:
		s.fetchedEpoch = ev.epoch
		return action{kind: actNone}
	case evAnswer:
		switch ev.code {
		case 0:
			if ev.diverging {
				return action{kind: actCutDiverging, fetchedEpoch: s.fetchedEpoch, epoch: ev.divEpoch, endOffset: ev.divEndOffset}
			}
			return action{kind: actAppend}
		case kerr.OffsetMovedToTieredStorage.Code, kerr.OffsetOutOfRange.Code:
			// Below the leader's local log start (KIP-405), or out of its
			// range: bootstrap checks which, and hands a log that is not
			// behind to the divergence check.
			s.needBootstrap = true
			return action{kind: actNone}
		default:
			// Fenced, not leader, unknown epoch...: wait for the control
			// plane to tell this node the new roles, and recheck divergence
			// before fetching again.
			s.needTruncate = true
			return s.pause(now, slog.LevelDebug)
		}
	case evAppended:
		switch {
		case ev.err == nil || errors.Is(ev.err, partition.ErrNotLeader):
			return action{kind: actNone} // not leader: the control plane's next update decides
		case errors.Is(ev.err, partition.ErrDiskFull):
			// Past disk_high_watermark (logged by tiering): fetch again
			// later, without a divergence check; the leader drops this
			// replica from the ISR meanwhile.
			s.pausedUntil = now.Add(diskFullPause)
			return action{kind: actNone}
		}
		s.needTruncate = true // check for divergence, without a tight loop if it fails again
		return s.pause(now, slog.LevelWarn)
	case evCut:
		switch {
		case errors.Is(ev.err, partition.ErrNotLeader):
			return action{kind: actNone} // the role moved on: the control plane's next update decides
		case ev.err != nil || !ev.cut:
			// A DivergingEpoch that cuts nothing cannot make progress by
			// fetching again: check with OffsetForLeaderEpoch, paced.
			s.needTruncate = true
			return s.pause(now, slog.LevelWarn)
		}
		return action{kind: actNone}
	}
	panic("replica: unknown follower event")
}

// next is what a partition does at now before this round's Fetch.
func (s *partState) next(now time.Time) action {
	switch {
	case s.needBootstrap && now.After(s.pausedUntil):
		return action{kind: actBootstrap}
	case s.needTruncate && now.After(s.pausedUntil):
		return action{kind: actTruncate}
	case s.needTruncate || s.needBootstrap || now.Before(s.pausedUntil):
		return action{kind: actNone}
	}
	return action{kind: actFetch}
}

func (s *partState) pause(now time.Time, level slog.Level) action {
	s.pausedUntil = now.Add(s.backoff)
	return action{kind: actBackoff, pause: s.backoff, level: level}
}

// Pacing of a fetcher's rounds (roundPacer).
const (
	roundRetryMin = 50 * time.Millisecond  // after the first failed round
	roundRetryMax = time.Second            // the failed-round pause doubles up to this
	roundIdle     = 100 * time.Millisecond // no partition to follow
	roundPaused   = 50 * time.Millisecond  // partitions, but none could fetch this round
)

// roundPacer decides how long a fetcher waits between rounds. It reads no
// clock. The zero value is ready. REQUIRES: owned by the fetcher goroutine.
type roundPacer struct {
	failPause time.Duration // the pause after the next failed round
}

// after returns the pause after a round that failed (no connection, a
// request error, a top-level error code) or fetched for active of parts
// partitions.
func (p *roundPacer) after(failed bool, parts, active int) time.Duration {
	if failed {
		pause := max(p.failPause, roundRetryMin)
		p.failPause = min(2*pause, roundRetryMax)
		return pause
	}
	p.failPause = 0
	switch {
	case parts == 0:
		return roundIdle
	case active == 0:
		return roundPaused
	}
	return 0
}
