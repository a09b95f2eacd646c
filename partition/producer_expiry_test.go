package partition

import (
	"errors"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/segment/vfs"
)

// fakeClock is a settable clock for Options.Now, safe for concurrent use.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) Now() time.Time           { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) Set(t time.Time)          { c.ms.Store(t.UnixMilli()) }
func (c *fakeClock) Add(d time.Duration)      { c.ms.Add(d.Milliseconds()) }
func (c *fakeClock) Millis() int64            { return c.ms.Load() }
func (c *fakeClock) At(d time.Duration) int64 { return c.ms.Load() + d.Milliseconds() }

// openExpiring opens a replica at clock with producer id expiration exp, a
// leader at epoch 0 when leader is set.
func openExpiring(t *testing.T, dir string, topicCfg map[string]string, clock *fakeClock, exp time.Duration, leader bool) *Replica {
	t.Helper()
	r, err := Open(Options{Dir: dir, Topic: "t", Partition: 0, Config: config.ResolveTopic(topicCfg, nil),
		Now: clock.Now, ProducerIDExpiration: exp})
	if err != nil {
		t.Fatal(err)
	}
	if leader {
		r.SetLeadership(true, 0)
	}
	return r
}

func producerIDs(r *Replica) []int64 {
	var ids []int64
	for _, p := range r.Producers() {
		ids = append(ids, p.ProducerID)
	}
	return ids
}

// An idempotent producer idle for producer.id.expiration.ms is forgotten
// (its next batch, at any sequence, is a new producer's), one with an open
// transaction or a recent batch is not; the snapshot written after the
// expiry leaves it out, and a restart, from that snapshot or from the
// segments alone, does not bring back a producer expired by then.
func TestExpireProducers(t *testing.T) {
	const exp = time.Hour
	dir := t.TempDir()
	clock := &fakeClock{}
	clock.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := openExpiring(t, dir, nil, clock, exp, true)
	// One record a batch: the batch's max timestamp is its first.
	for i := int32(0); i < 3; i++ {
		if _, err := r.AppendLeader(build(t, idem(1, i, clock.Millis()), 1)); err != nil { // 0-2
			t.Fatal(err)
		}
	}
	for i := int32(0); i < 2; i++ {
		if _, err := r.AppendLeader(build(t, txnOpts(2, 0, i, clock.Millis()), 1)); err != nil { // 3-4, open
			t.Fatal(err)
		}
	}
	if _, err := r.AppendLeader(build(t, idem(3, 0, clock.At(30*time.Minute)), 1)); err != nil { // 5
		t.Fatal(err)
	}

	clock.Add(exp - time.Millisecond)
	if n := r.ExpireProducers(clock.Now()); n != 0 {
		t.Fatalf("%d producers expired a millisecond early", n)
	}
	if _, err := r.AppendLeader(build(t, idem(1, 7, clock.Millis()-1), 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("a gap before the expiry: %v, want ErrOutOfOrderSequence", err)
	}
	clock.Add(time.Millisecond)
	if n := r.ExpireProducers(clock.Now()); n != 1 {
		t.Fatalf("%d producers expired, want 1 (producer 1)", n)
	}
	if got := producerIDs(r); !slices.Equal(got, []int64{2, 3}) {
		t.Fatalf("producers %v after the expiry, want [2 3] (2's transaction is open, 3 wrote 30 minutes later)", got)
	}
	// The snapshot written now (at Close) leaves producer 1 out.
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	snap := snapshotProducers(t, dir, 6)
	if _, ok := snap[1]; ok || len(snap) != 2 {
		t.Fatalf("snapshot after the expiry holds %v, want producers 2 and 3 only", snap)
	}

	// Back from the segments alone (no snapshot), a day later: the replay
	// brings producers 1 and 3 back, and the expiry after it removes them;
	// producer 2's transaction is still open, whatever its age.
	for _, off := range listSnapshots(vfs.Default, dir) {
		os.Remove(snapshotName(dir, off))
	}
	clock.Add(24 * time.Hour)
	r = openExpiring(t, dir, nil, clock, exp, true)
	defer r.Close()
	if got := producerIDs(r); !slices.Equal(got, []int64{2}) {
		t.Fatalf("producers %v after a replay of the segments, want [2]", got)
	}
	// Producer 1 comes back at sequence 7: accepted as a new producer,
	// written once, and its retry is a duplicate.
	res, err := r.AppendLeader(build(t, idem(1, 7, clock.Millis()), 2))
	if err != nil || res.Duplicate || res.BaseOffset != 6 {
		t.Fatalf("expired producer's next batch: %+v %v, want it appended at 6", res, err)
	}
	if dup, err := r.AppendLeader(build(t, idem(1, 7, clock.Millis()), 2)); err != nil || !dup.Duplicate || dup.BaseOffset != 6 {
		t.Fatalf("its retry: %+v %v, want a duplicate of 6", dup, err)
	}
	// The open transaction, once ended, lets producer 2 expire too.
	marker(t, r, TxnMarker{ProducerID: 2, ProducerEpoch: 0, Commit: true})
	clock.Add(exp + time.Second) // past producer 1's batch (two records) and the marker
	if n := r.ExpireProducers(clock.Now()); n != 2 || len(r.Producers()) != 0 {
		t.Fatalf("%d expired, %v left: want producers 1 and 2 gone", n, producerIDs(r))
	}
}

// A replica reopened from a snapshot that holds an expired producer drops
// it (Kafka's loadProducerState); a follower expires its own state.
func TestExpireProducersFromSnapshotAndOnFollower(t *testing.T) {
	const exp = time.Hour
	clock := &fakeClock{}
	clock.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	dir := t.TempDir()
	leader := openExpiring(t, dir, nil, clock, exp, true)
	for pid := int64(1); pid <= 3; pid++ {
		if _, err := leader.AppendLeader(build(t, idem(pid, 0, clock.At(time.Duration(pid)*time.Minute)), 1)); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := leader.Log().ReadBytes(0, 1<<20, leader.Log().LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	follower := openExpiring(t, t.TempDir(), nil, clock, exp, false)
	defer follower.Close()
	if err := follower.AppendFollower(raw, 0); err != nil {
		t.Fatal(err)
	}
	if err := leader.Close(); err != nil { // the snapshot at 3 holds all three
		t.Fatal(err)
	}
	if snap := snapshotProducers(t, dir, 3); len(snap) != 3 {
		t.Fatalf("snapshot %v, want 3 producers", snap)
	}
	clock.Add(exp + 2*time.Minute) // producers 1 and 2 are an hour old
	if n := follower.ExpireProducers(clock.Now()); n != 2 || !slices.Equal(producerIDs(follower), []int64{3}) {
		t.Fatalf("follower expired %d, kept %v: want [3]", n, producerIDs(follower))
	}
	leader = openExpiring(t, dir, nil, clock, exp, true)
	defer leader.Close()
	if got := producerIDs(leader); !slices.Equal(got, []int64{3}) {
		t.Fatalf("reopened from the snapshot with producers %v, want [3]", got)
	}
}

// On a LogAppendTime topic a producer's age is that of the broker's
// timestamp written in its batch, not the producer's own clock: a producer
// whose clock is two hours behind is not expired at once (nor after a
// restart, which replays the batch as written).
func TestExpireProducersLogAppendTime(t *testing.T) {
	const exp = time.Hour
	clock := &fakeClock{}
	clock.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	dir := t.TempDir()
	cfg := map[string]string{config.MessageTimestampType: "LogAppendTime"}
	r := openExpiring(t, dir, cfg, clock, exp, true)
	if _, err := r.AppendLeader(build(t, idem(1, 0, clock.At(-2*time.Hour)), 2)); err != nil {
		t.Fatal(err)
	}
	clock.Add(exp / 2)
	if n := r.ExpireProducers(clock.Now()); n != 0 {
		t.Fatalf("expired %d by the producer's timestamp, want the log append time's", n)
	}
	if p := producerInfo(t, r, 1); p.LastTimestamp != clock.At(-exp/2) {
		t.Fatalf("last timestamp %d, want the append time %d", p.LastTimestamp, clock.At(-exp/2))
	}
	clock.Add(exp / 2)
	if n := r.ExpireProducers(clock.Now()); n != 1 {
		t.Fatalf("expired %d an hour after the append, want 1", n)
	}
	r.Close()
}

// RemoveExpired never removes a producer with an open transaction, and
// ProducerState without expiry forgets nothing (pure state, no clock).
func TestRemoveExpiredKeepsOpenTransactions(t *testing.T) {
	ps := NewProducerState()
	h := batch.Header{ProducerID: 5, BaseOffset: 10, MaxTimestamp: 0}
	ps.Update(&h)
	open := batch.Header{ProducerID: 6, BaseOffset: 11, MaxTimestamp: 0, Attributes: txnAttr(t)}
	ps.Update(&open)
	if n := ps.RemoveExpired(1000, 1000); n != 1 || ps.Len() != 1 || ps.OpenTxns() != 1 || ps.FirstOpenOffset() != 11 {
		t.Fatalf("removed %d, left %d producers, %d open at %d", n, ps.Len(), ps.OpenTxns(), ps.FirstOpenOffset())
	}
}

// txnAttr is the attributes of a transactional batch, as Build writes them.
func txnAttr(t *testing.T) int16 {
	h, err := batch.ParseHeader(build(t, txnOpts(1, 0, 0, 0), 1))
	if err != nil {
		t.Fatal(err)
	}
	return h.Attributes
}
