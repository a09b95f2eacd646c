package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/partition"
)

// A scripted step of a followed partition: at ms milliseconds after the
// script's start, ev happens; want is what the state machine answers.
type followStep struct {
	ms   int
	ev   event
	want action
}

var (
	errIO             = errors.New("connection reset")
	errLocalNotLeader = fmt.Errorf("%w: t-0", partition.ErrNotLeader)
	round             = event{kind: evRound}
	sent              = func(epoch int32) event { return event{kind: evSent, epoch: epoch} }
	answer            = func(code int16) event { return event{kind: evAnswer, code: code} }
	diverging         = func(epoch int32, end int64) event {
		return event{kind: evAnswer, diverging: true, divEpoch: epoch, divEndOffset: end}
	}
	truncated  = func(err error) event { return event{kind: evTruncated, err: err} }
	bootstrap  = func(err error) event { return event{kind: evBootstrapped, err: err} }
	appended   = func(err error) event { return event{kind: evAppended, err: err} }
	cut        = func(did bool, err error) event { return event{kind: evCut, cut: did, err: err} }
	follow     = event{kind: evFollow}
	none       = action{kind: actNone}
	fetch      = action{kind: actFetch}
	doTruncate = action{kind: actTruncate}
	doBoot     = action{kind: actBootstrap}
	doAppend   = action{kind: actAppend}
	backoff    = func(d time.Duration, level slog.Level) action {
		return action{kind: actBackoff, pause: d, level: level}
	}
	cutAt = func(fetched, epoch int32, end int64) action {
		return action{kind: actCutDiverging, fetchedEpoch: fetched, epoch: epoch, endOffset: end}
	}
)

// TestFollowerStateMachine plays scripts of events against one partition's
// state machine (a new follower, backoff 200 ms unless the case says) and
// checks every answer: which request the fetcher makes next, when a
// partition pauses and for how long, and how loud a failure is logged.
func TestFollowerStateMachine(t *testing.T) {
	const ms = time.Millisecond
	cases := []struct {
		name    string
		backoff time.Duration
		steps   []followStep
	}{
		{name: "normal fetch: a new follower checks divergence once, then fetches and appends round after round", steps: []followStep{
			{0, round, doTruncate},
			{0, truncated(nil), fetch},
			{0, sent(3), none},
			{5, answer(0), doAppend},
			{5, appended(nil), none},
			{6, round, fetch},
			{6, sent(3), none},
			{9, answer(0), doAppend},
			{9, appended(nil), none},
		}},
		{name: "DivergingEpoch answer: cut at the leader's epoch end for the epoch that was sent, then fetch on", steps: []followStep{
			{0, round, doTruncate},
			{0, truncated(nil), fetch},
			{0, sent(2), none},
			{4, diverging(1, 5), cutAt(2, 1, 5)},
			{4, cut(true, nil), none},
			{5, round, fetch},
			{5, sent(1), none},
			{7, answer(0), doAppend},
		}},
		{name: "DivergingEpoch that cuts nothing: OffsetForLeaderEpoch after the backoff", steps: []followStep{
			{0, round, doTruncate},
			{0, truncated(nil), fetch},
			{0, sent(1), none},
			{3, diverging(1, 5), cutAt(1, 1, 5)},
			{3, cut(false, nil), backoff(200*ms, slog.LevelWarn)},
			{100, round, none},
			{203, round, none}, // the pause ends after 203 ms, not at it
			{204, round, doTruncate},
			{204, truncated(nil), fetch},
		}},
		{name: "DivergingEpoch whose cut fails: the same as one that cuts nothing", steps: []followStep{
			{0, round, doTruncate},
			{0, truncated(nil), fetch},
			{0, sent(4), none},
			{1, diverging(3, 9), cutAt(4, 3, 9)},
			{1, cut(false, errIO), backoff(200*ms, slog.LevelWarn)},
			{202, round, doTruncate},
		}},
		{name: "OffsetForLeaderEpoch path: a failed check pauses the partition and retries; no fetch until it succeeds", steps: []followStep{
			{0, round, doTruncate},
			{0, truncated(errIO), backoff(200*ms, slog.LevelDebug)},
			{50, round, none},
			{200, round, none},
			{201, round, doTruncate},
			{201, truncated(errIO), backoff(200*ms, slog.LevelDebug)},
			{402, round, doTruncate},
			{402, truncated(nil), fetch},
			{402, sent(7), none},
		}},
		{name: "errors and backoff: a configured backoff paces a partition error and a failed append", backoff: 750 * ms, steps: []followStep{
			{0, round, doTruncate},
			{0, truncated(nil), fetch},
			{0, sent(1), none},
			{10, answer(kerr.UnknownLeaderEpoch.Code), backoff(750*ms, slog.LevelDebug)},
			{500, round, none},
			{761, round, doTruncate}, // a partition error rechecks divergence
			{761, truncated(nil), fetch},
			{761, sent(1), none},
			{770, answer(0), doAppend},
			{770, appended(errors.New("crc mismatch")), backoff(750*ms, slog.LevelWarn)},
			{1000, round, none},
			{1521, round, doTruncate},
		}},
		{name: "bootstrap: behind the leader's local log start; failures double the pause, Warn once", steps: []followStep{
			{0, round, doTruncate},
			{0, truncated(nil), fetch},
			{0, sent(1), none},
			{5, answer(kerr.OffsetMovedToTieredStorage.Code), none},
			{6, round, doBoot},
			{6, bootstrap(errNoRemoteSegment), backoff(bootstrapRetryMin, slog.LevelWarn)},
			{300, round, none},
			{507, round, doBoot},
			{507, bootstrap(errNoRemoteSegment), backoff(2*bootstrapRetryMin, slog.LevelDebug)},
			{1508, round, doBoot},
			{1508, bootstrap(nil), fetch}, // rebuilt: fetch from the new log end in the same round
			{1508, sent(1), none},
		}},
		{name: "OFFSET_OUT_OF_RANGE but not behind: the bootstrap hands over to the divergence check in the same round", steps: []followStep{
			{0, round, doTruncate},
			{0, truncated(nil), fetch},
			{0, sent(1), none},
			{2, answer(kerr.OffsetOutOfRange.Code), none},
			{3, round, doBoot},
			{3, bootstrap(fmt.Errorf("wrapped: %w", errNotBehind)), doTruncate},
			{3, truncated(nil), fetch},
		}},
		{name: "leader change: a new role starts over with the divergence check, whatever the partition was doing", steps: []followStep{
			{0, round, doTruncate},
			{0, truncated(nil), fetch},
			{0, sent(1), none},
			{1, answer(kerr.OffsetMovedToTieredStorage.Code), none},
			{2, round, doBoot},
			{2, bootstrap(errIO), backoff(bootstrapRetryMin, slog.LevelWarn)},
			{3, follow, none}, // the control plane names a new leader or epoch
			{3, round, doTruncate},
			{3, truncated(nil), fetch},
			{3, sent(2), none},
			{4, answer(kerr.OffsetMovedToTieredStorage.Code), none},
			{5, round, doBoot},
			{5, bootstrap(errIO), backoff(bootstrapRetryMin, slog.LevelWarn)}, // the retry pacing started over too
		}},
		{name: "NOT_LEADER_OR_FOLLOWER from the leader: pause, then recheck divergence before fetching", steps: []followStep{
			{0, round, doTruncate},
			{0, truncated(nil), fetch},
			{0, sent(1), none},
			{1, answer(kerr.NotLeaderForPartition.Code), backoff(200*ms, slog.LevelDebug)},
			{150, round, none},
			{202, round, doTruncate},
			{202, truncated(errLocalNotLeader), backoff(200*ms, slog.LevelDebug)},
			{403, round, doTruncate},
		}},
		{name: "not leader locally (this replica leads again): an append or a cut that meets it does nothing", steps: []followStep{
			{0, round, doTruncate},
			{0, truncated(nil), fetch},
			{0, sent(1), none},
			{1, answer(0), doAppend},
			{1, appended(errLocalNotLeader), none},
			{2, round, fetch},
			{2, sent(1), none},
			{3, diverging(0, 0), cutAt(1, 0, 0)},
			{3, cut(false, errLocalNotLeader), none},
			{4, round, fetch},
		}},
		{name: "disk full: an append refused above disk_high_watermark pauses a second, silently, and fetches again without a divergence check", steps: []followStep{
			{0, round, doTruncate},
			{0, truncated(nil), fetch},
			{0, sent(1), none},
			{1, answer(0), doAppend},
			{1, appended(fmt.Errorf("%w: above 90%%", partition.ErrDiskFull)), none},
			{2, round, none},
			{1000, round, none},
			{1001, round, fetch},
		}},
		{name: "an empty log: the divergence check succeeds at once (nothing to cut) and the first round fetches", steps: []followStep{
			{0, round, doTruncate},
			{0, truncated(nil), fetch},
			{0, sent(-1), none},
			{1, answer(0), doAppend},
		}},
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			backoff := c.backoff
			if backoff == 0 {
				backoff = defaultRetryBackoff
			}
			s := newPartState(backoff)
			for i, st := range c.steps {
				got := s.Step(start.Add(time.Duration(st.ms)*time.Millisecond), st.ev)
				if got != st.want {
					t.Fatalf("step %d (at %d ms, event %+v): got %+v, want %+v; state %+v", i, st.ms, st.ev, got, st.want, s)
				}
			}
		})
	}
}

// TestRoundPacer: a failed round pauses 50 ms, doubling to 1 s; a round
// that works resets it; an idle fetcher (nothing followed) waits 100 ms and
// one whose partitions are all paused 50 ms; a round that fetched goes on
// at once (the leader's MaxWaitMillis paces it).
func TestRoundPacer(t *testing.T) {
	var p roundPacer
	const ms = time.Millisecond
	for i, want := range []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second} {
		if got := p.after(true, 3, 3); got != want {
			t.Fatalf("failure %d: pause %v, want %v", i+1, got, want)
		}
	}
	if got := p.after(false, 3, 3); got != 0 {
		t.Fatalf("after a round that fetched: pause %v, want 0", got)
	}
	if got := p.after(true, 3, 0); got != 50*ms {
		t.Fatalf("a failure after a success: pause %v, want 50ms (reset)", got)
	}
	if got := p.after(false, 0, 0); got != 100*ms {
		t.Fatalf("nothing followed: pause %v, want 100ms", got)
	}
	if got := p.after(false, 2, 0); got != 50*ms {
		t.Fatalf("every partition paused: pause %v, want 50ms", got)
	}
}
