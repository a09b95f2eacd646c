package partition

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
)

func checkHistory(t *testing.T, r *Replica, want ...segment.EpochEntry) {
	t.Helper()
	if got := r.Log().Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
}

// TestSetLeadershipAssignsEpoch: a replica that becomes leader in a new
// epoch has it in its history at once, at its log end (Kafka's makeLeader);
// its first append in the epoch adds nothing; re-election in the same
// epoch and becoming follower assign nothing.
func TestSetLeadershipAssignsEpoch(t *testing.T) {
	r := openTest(t, t.TempDir(), nil, nil)
	defer r.Close()
	r.SetLeadership(true, 1)
	checkHistory(t, r, segment.EpochEntry{Epoch: 1, StartOffset: 0})
	if _, err := r.AppendLeader(build(t, batch.NoProducer(), 5)); err != nil {
		t.Fatal(err)
	}
	if !r.SetLeadership(true, 3) {
		t.Fatal("a new epoch reported no change")
	}
	checkHistory(t, r, segment.EpochEntry{Epoch: 1, StartOffset: 0}, segment.EpochEntry{Epoch: 3, StartOffset: 5})
	if e, end := r.Log().EndOffsetForEpoch(2); e != 1 || end != 5 {
		t.Fatalf("epoch 2 before any write in 3: %d %d, want 1 5", e, end)
	}
	if r.SetLeadership(true, 3) {
		t.Fatal("re-election in the same epoch reported a change")
	}
	res, err := r.AppendLeader(build(t, batch.NoProducer(), 2))
	if err != nil || res.LeaderEpoch != 3 || res.BaseOffset != 5 {
		t.Fatalf("append in epoch 3: %+v %v", res, err)
	}
	checkHistory(t, r, segment.EpochEntry{Epoch: 1, StartOffset: 0}, segment.EpochEntry{Epoch: 3, StartOffset: 5})
	r.SetLeadership(false, 4)
	checkHistory(t, r, segment.EpochEntry{Epoch: 1, StartOffset: 0}, segment.EpochEntry{Epoch: 3, StartOffset: 5})
}

// TestLeaderReopenedInItsEpochAssignsAgain: reopening drops the entry of an
// epoch with no batch (as Kafka's log loader does); a replica reopened at
// the epoch it led in (Options.LeaderEpoch) opens as a follower, and when
// the control plane makes it leader again at that epoch, SetLeadership
// must put the epoch back in the history.
func TestLeaderReopenedInItsEpochAssignsAgain(t *testing.T) {
	dir := t.TempDir()
	cfg := config.ResolveTopic(nil, nil)
	r, err := Open(Options{Dir: dir, Topic: "t", Config: cfg, LeaderEpoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	r.SetLeadership(true, 1)
	if _, err := r.AppendLeader(build(t, batch.NoProducer(), 4)); err != nil {
		t.Fatal(err)
	}
	r.SetLeadership(true, 2)
	checkHistory(t, r, segment.EpochEntry{Epoch: 1, StartOffset: 0}, segment.EpochEntry{Epoch: 2, StartOffset: 4})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r, err = Open(Options{Dir: dir, Topic: "t", Config: cfg, LeaderEpoch: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	checkHistory(t, r, segment.EpochEntry{Epoch: 1, StartOffset: 0})
	if r.IsLeader() || !r.SetLeadership(true, 2) {
		t.Fatal("the reopened replica did not open as a follower and take the role")
	}
	checkHistory(t, r, segment.EpochEntry{Epoch: 1, StartOffset: 0}, segment.EpochEntry{Epoch: 2, StartOffset: 4})
}

// TestFormerLeaderDropsUnwrittenEpoch is the case Kafka's truncateTo
// guards: a replica elected (epoch 2) that lost the role before writing,
// follows a new leader (epoch 3) that never had epoch 2. Its fetch with its
// latest epoch is answered DivergingEpoch {1, 5}, which cuts nothing; the
// unwritten entry must go, or every fetch after it is told to diverge
// again. The next fetch, with the epoch of its last batch, is served.
func TestFormerLeaderDropsUnwrittenEpoch(t *testing.T) {
	a, b := pair(t, "1") // a leads at 1, b follows
	if _, err := a.AppendLeader(build(t, batch.NoProducer(), 5)); err != nil {
		t.Fatal(err)
	}
	replicate(t, a, b, time.Now())
	a.SetLeadership(true, 2) // elected again, writes nothing
	checkHistory(t, a, segment.EpochEntry{Epoch: 1, StartOffset: 0}, segment.EpochEntry{Epoch: 2, StartOffset: 5})
	// b leads at 3; a follows.
	a.SetLeadership(false, 3)
	b.SetLeadership(true, 3)
	b.SetAssignment(2, []int32{1, 2}, []int32{1, 2})
	checkHistory(t, b, segment.EpochEntry{Epoch: 1, StartOffset: 0}, segment.EpochEntry{Epoch: 3, StartOffset: 5})

	var div *DivergedError
	_, err := b.FollowerFetch(1, a.Log().LogEndOffset(), a.Log().LatestEpoch(), time.Now())
	if !errors.As(err, &div) || div.Epoch != 1 || div.EndOffset != 5 {
		t.Fatalf("fetch with the unwritten epoch 2: %v, want DivergingEpoch {1 5}", err)
	}
	to, err := a.TruncateDivergent(2, div.Epoch, div.EndOffset)
	if err != nil || to != 5 {
		t.Fatalf("TruncateDivergent: %d %v, want no cut at 5", to, err)
	}
	checkHistory(t, a, segment.EpochEntry{Epoch: 1, StartOffset: 0})
	if _, err := b.FollowerFetch(1, a.Log().LogEndOffset(), a.Log().LatestEpoch(), time.Now()); err != nil {
		t.Fatalf("the next fetch: %v", err)
	}
	// The same through OffsetForLeaderEpoch: b answers epoch 2 as {1, 5}.
	if e, end := b.Log().EndOffsetForEpoch(2); e != 1 || end != 5 {
		t.Fatalf("b's answer for epoch 2: %d %d", e, end)
	}
}

// TestTruncateDivergentKeepsAgreedEntryAtLogStart: an empty log reset to
// the remote tail holds the epoch in force at its start; a leader that has
// that epoch agrees, and the entry stays (it is history, not an unwritten
// epoch).
func TestTruncateDivergentKeepsAgreedEntryAtLogStart(t *testing.T) {
	f := openFollower(t, t.TempDir(), nil, nil)
	defer f.Close()
	f.SetLeadership(false, 5)
	hist := []segment.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 4, StartOffset: 700}}
	if err := f.Log().ResetTo(1000, hist); err != nil {
		t.Fatal(err)
	}
	checkHistory(t, f, segment.EpochEntry{Epoch: 4, StartOffset: 1000})
	if to, err := f.TruncateDivergent(4, 4, 1200); err != nil || to != 1000 {
		t.Fatalf("agreement: %d %v", to, err)
	}
	checkHistory(t, f, segment.EpochEntry{Epoch: 4, StartOffset: 1000})
}

// TestFollowerFetchOnReopenedReplica: a replica opens as a follower, so a
// follower fetch is refused until the control plane makes it leader; then
// its own epoch is in its history and the follower's epoch 0 ends at its
// log end. (A leader whose history cannot place an epoch at or below its
// own no longer exists: every leader is made by SetLeadership, which
// records its epoch.)
func TestFollowerFetchOnReopenedReplica(t *testing.T) {
	r, err := Open(Options{Dir: t.TempDir(), Topic: "t", Config: config.ResolveTopic(nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.FollowerFetch(2, 0, 0, time.Now()); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("fetch from a replica just opened: %v, want ErrNotLeader", err)
	}
	r.SetLeadership(true, 1)
	if _, err := r.FollowerFetch(2, 0, 0, time.Now()); err != nil {
		t.Fatalf("once leading at 1, epoch 0 ends at the log end: %v", err)
	}
}

// TestNewLeaderRefusesFollowerAppend: the answer to a fetch a replica sent
// as follower can arrive after it became leader (the broker stops its
// fetcher after the role change). Appending it would put a batch of the old
// epoch after the new epoch's start in the history, and the new leader
// would serve it to followers that then diverge from it forever; it is
// refused, and the history and log stay as the election left them.
func TestNewLeaderRefusesFollowerAppend(t *testing.T) {
	old, f := pair(t, "1")
	if _, err := old.AppendLeader(build(t, batch.NoProducer(), 3)); err != nil {
		t.Fatal(err)
	}
	replicate(t, old, f, time.Now())
	// The old leader writes once more; f's fetch for it is in flight when
	// f is elected.
	if _, err := old.AppendLeader(build(t, batch.NoProducer(), 2)); err != nil {
		t.Fatal(err)
	}
	late, err := old.Log().ReadBytes(3, 1<<20, old.Log().LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	f.SetLeadership(true, 2)
	if err := f.AppendFollower(late, 5); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a follower append on the new leader: %v, want ErrNotLeader", err)
	}
	if f.Log().LogEndOffset() != 3 {
		t.Fatalf("log end %d, want 3", f.Log().LogEndOffset())
	}
	checkHistory(t, f, segment.EpochEntry{Epoch: 1, StartOffset: 0}, segment.EpochEntry{Epoch: 2, StartOffset: 3})
}
