package tiering

import (
	"testing"
	"time"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/partition"
)

// passOnce runs one pass without reconciling and returns how many
// partitions it passed over.
func passOnce(t *testing.T, m *Manager) uint64 {
	t.Helper()
	before := m.Stats().PassedOver
	m.RunOnce(testCtx(t), false)
	return m.Stats().PassedOver - before
}

// A led partition whose last visit settled is passed over until something
// its visit reads changes: its log, its remote records (a DeleteRecords
// log start here), its config, or the clock past its retention.ms; each
// change is acted on at the next pass.
func TestQuietLeaderIsPassedOverUntilItChanges(t *testing.T) {
	f := newFixture(t, map[string]string{config.RetentionMs: "3600000"})
	f.produce(t, 100)
	m := f.manager(t, nil)
	if n := passOnce(t, m); n != 0 {
		t.Fatalf("first pass passed over %d partitions", n)
	}
	uploaded := m.Stats().SegmentsUploaded
	if uploaded == 0 {
		t.Fatal("nothing uploaded")
	}
	// The first pass's uploads changed what it read: the second visits,
	// finds nothing to do and settles; the third passes over.
	if n := passOnce(t, m); n != 0 {
		t.Fatalf("the pass after uploads passed over %d partitions", n)
	}
	if n := passOnce(t, m); n != 1 {
		t.Fatalf("an unchanged partition: passed over %d, want 1", n)
	}

	// New records: the log changed, the next pass uploads.
	f.produce(t, 30)
	if n := passOnce(t, m); n != 0 || m.Stats().SegmentsUploaded == uploaded {
		t.Fatalf("after new records: passed over %d, uploads %d (before %d)", n, m.Stats().SegmentsUploaded, uploaded)
	}
	passOnce(t, m)
	if n := passOnce(t, m); n != 1 {
		t.Fatalf("settled again: passed over %d, want 1", n)
	}

	// A log start recorded elsewhere (DeleteRecords through another
	// node): the remote metadata changed, the next pass applies it.
	start := f.meta.ListRemoteSegments(f.topic.ID, 0)[0].EndOffset + 1 // the first remote segment goes
	if err := f.meta.RaiseLogStart(testCtx(t), f.topic.ID, 0, start, f.rep.LeaderEpoch()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { got, ok := f.meta.RemoteLogStart(f.topic.ID, 0); return ok && got == start })
	if n := passOnce(t, m); n != 0 || f.rep.LogStartOffset() != start {
		t.Fatalf("after a recorded log start %d: passed over %d, log start %d", start, n, f.rep.LogStartOffset())
	}
	passOnce(t, m)
	if n := passOnce(t, m); n != 1 {
		t.Fatalf("settled again: passed over %d, want 1", n)
	}

	// A config change: visited again.
	f.setTopicConfig(t, config.RetentionMs, "7200000")
	if n := passOnce(t, m); n != 0 {
		t.Fatalf("after a config change: passed over %d", n)
	}
	if n := passOnce(t, m); n != 1 {
		t.Fatalf("settled again: passed over %d, want 1", n)
	}

	// The clock past retention.ms of the remote segments: due, visited,
	// and they go.
	remote, deleted := len(f.meta.ListRemoteSegments(f.topic.ID, 0)), m.Stats().RemoteSegmentsDeleted
	f.now = f.now.Add(3 * time.Hour)
	if n := passOnce(t, m); n != 0 {
		t.Fatalf("past retention.ms: passed over %d", n)
	}
	if got := m.Stats().RemoteSegmentsDeleted - deleted; got != uint64(remote) || remote == 0 {
		t.Fatalf("past retention.ms: deleted %d of %d remote segments", got, remote)
	}
}

// A follower's replica is passed over the same way, and visited again when
// the leader's uploads change the partition's remote records: then its
// local segments that the uploads cover go (local.retention.bytes=0).
func TestQuietFollowerIsVisitedWhenTheLeaderUploads(t *testing.T) {
	cfgs := map[string]string{config.RemoteStorageEnable: "true", config.SegmentBytes: "2048",
		config.LocalRetentionBytes: "0", config.RemoteDeleteGraceMs: "0"}
	f := newFixture(t, cfgs)
	f.produce(t, 100)
	follower := f.follow(t, cfgs, 1<<20)
	m2 := f.manager(t, func(c *Config) {
		c.NodeID = 2
		c.Replicas = func() []*partition.Replica { return []*partition.Replica{follower} }
	})
	segs := len(follower.Log().Segments())
	passOnce(t, m2) // nothing uploaded yet: keeps every segment
	if n := passOnce(t, m2); n != 1 {
		t.Fatalf("an unchanged follower: passed over %d, want 1", n)
	}
	if got := len(follower.Log().Segments()); got != segs {
		t.Fatalf("follower kept %d of %d segments before any upload", got, segs)
	}
	leader := f.manager(t, nil)
	leader.RunOnce(testCtx(t), false)
	if leader.Stats().SegmentsUploaded == 0 {
		t.Fatal("the leader uploaded nothing")
	}
	waitFor(t, func() bool { return len(f.meta.ListRemoteSegments(f.topic.ID, 0)) > 0 })
	if n := passOnce(t, m2); n != 0 {
		t.Fatalf("after the leader's uploads: passed over %d", n)
	}
	if got := len(follower.Log().Segments()); got >= segs {
		t.Fatalf("follower kept %d of %d segments after the uploads", got, segs)
	}
}

// The loop's passes reconcile a partition that changed recently every
// ReconcileEvery passes, in the partition's phase: an orphan past the grace
// goes at the one pass of ReconcileEvery whose phase is the partition's,
// and a pass in another phase passes the quiet partition over.
func TestReconcileInThePartitionsPhase(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(t, 50)
	// Passes of a minute: the 2 minutes the clock moves below stay within
	// the grace (1 minute) and two rounds of 4 passes since the change.
	m := f.manager(t, func(c *Config) { c.ReconcileEvery, c.Interval = 4, time.Minute })
	m.RunOnce(testCtx(t), true)
	m.RunOnce(testCtx(t), true)
	f.putStray(t)
	f.now = f.now.Add(2 * time.Minute)
	phase := -1
	for i := range 4 {
		n := m.stats.passes.Load()
		due := m.reconcileDue(n, f.topic.ID, 0, true)
		before := m.Stats()
		m.pass(testCtx(t), reconcilePhased)
		after := m.Stats()
		deleted := after.OrphansDeleted - before.OrphansDeleted
		switch {
		case due && (deleted != 1 || after.PassedOver != before.PassedOver):
			t.Fatalf("pass %d (its phase): deleted %d orphans, passed over %d", i, deleted, after.PassedOver-before.PassedOver)
		case !due && (deleted != 0 || after.PassedOver != before.PassedOver+1):
			t.Fatalf("pass %d (not its phase): deleted %d orphans, passed over %d", i, deleted, after.PassedOver-before.PassedOver)
		}
		if due {
			phase = i
		}
	}
	if phase < 0 {
		t.Fatal("no pass of 4 was the partition's phase")
	}
	f.checkNoOrphans(t)
}

// A partition whose inputs have not changed for longer than the grace and
// two rounds is listed only every quietReconcileEvery rounds: an orphan
// past the grace then goes at the partition's quiet phase, and the passes
// of its short phase before that pass it over.
func TestQuietPartitionIsReconciledRarely(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(t, 50)
	m := f.manager(t, func(c *Config) { c.ReconcileEvery, c.Interval = 2, time.Second })
	m.RunOnce(testCtx(t), true)
	m.RunOnce(testCtx(t), true)
	f.putStray(t)
	f.now = f.now.Add(2 * time.Minute) // past the grace (1 minute) and two rounds (4 s)
	shortPhases, listed := 0, -1
	for i := range 2 * quietReconcileEvery {
		n := m.stats.passes.Load()
		before := m.Stats()
		m.pass(testCtx(t), reconcilePhased)
		deleted := m.Stats().OrphansDeleted - before.OrphansDeleted
		quietPhase := m.reconcileDue(n, f.topic.ID, 0, false)
		switch {
		case quietPhase && deleted != 1:
			t.Fatalf("pass %d (its quiet phase): deleted %d orphans, want 1", i, deleted)
		case !quietPhase && deleted != 0:
			t.Fatalf("pass %d (not its quiet phase): deleted %d orphans", i, deleted)
		case quietPhase:
			listed = i
		case m.reconcileDue(n, f.topic.ID, 0, true) && listed < 0:
			shortPhases++
		}
		if listed >= 0 {
			break
		}
	}
	if listed < 0 {
		t.Fatalf("no pass of %d listed the quiet partition", 2*quietReconcileEvery)
	}
	if shortPhases == 0 && listed >= 2 {
		t.Fatalf("no short phase before pass %d", listed)
	}
	f.checkNoOrphans(t)
}

// A partition with no remote record ever is not listed at the short
// cadence, however new: nothing was uploaded to be cut off. Once its first
// upload's records are in, it is.
func TestNeverTieredPartitionIsNotRecent(t *testing.T) {
	f := newFixture(t, nil)
	m := f.manager(t, nil)
	if _, recent := m.look(f.rep, m.inputs(f.rep, f.topic.ID, true), 0); recent {
		t.Fatal("a new partition with no remote record counts as changed recently")
	}
	f.produce(t, 50)
	m.RunOnce(testCtx(t), false)
	if m.Stats().SegmentsUploaded == 0 {
		t.Fatal("nothing uploaded")
	}
	waitFor(t, func() bool { return m.meta.PartitionGen(f.topic.ID, 0) != 0 })
	if _, recent := m.look(f.rep, m.inputs(f.rep, f.topic.ID, true), 1); !recent {
		t.Fatal("a partition right after its uploads does not count as changed recently")
	}
}

// The loop's pass skips the walk over the replicas while nothing any
// visit reads has changed, except at the start of a reconcile round; a new
// record, or the clock past a retention due, brings the walk back.
func TestIdleWalkIsSkippedUntilSomethingChanges(t *testing.T) {
	f := newFixture(t, map[string]string{config.RetentionMs: "3600000"})
	f.produce(t, 50)
	m := f.manager(t, func(c *Config) { c.ReconcileEvery, c.Interval = 4, time.Second })
	m.RunOnce(testCtx(t), false)
	m.RunOnce(testCtx(t), false)
	f.now = f.now.Add(2 * time.Minute) // past the grace and two rounds: quiet, not recent
	// pass runs one loop pass and reports whether it skipped its walk;
	// align runs passes until the next one does not start a round (a pass
	// that starts one always walks).
	pass := func() bool {
		n, before := m.stats.passes.Load(), m.Stats().WalksSkipped
		m.pass(testCtx(t), reconcilePhased)
		skipped := m.Stats().WalksSkipped != before
		if skipped && n%4 == 0 {
			t.Fatalf("pass %d starts a round and skipped its walk", n)
		}
		return skipped
	}
	align := func() {
		for m.stats.passes.Load()%4 == 0 {
			pass()
		}
	}
	align()
	pass() // a walk that finds every partition quiet
	align()
	if !pass() {
		t.Fatal("an idle pass walked")
	}
	uploaded := m.Stats().SegmentsUploaded
	align()
	f.produce(t, 30)
	if pass() {
		t.Fatal("the pass after new records skipped its walk")
	}
	if m.Stats().SegmentsUploaded == uploaded {
		t.Fatal("the walk after new records uploaded nothing")
	}
	pass()                             // settles after its own uploads
	f.now = f.now.Add(2 * time.Minute) // and is no longer recent
	align()
	pass()
	align()
	if !pass() {
		t.Fatal("idle again, the pass walked")
	}
	deleted := m.Stats().RemoteSegmentsDeleted
	align()
	f.now = f.now.Add(2 * time.Hour) // past retention.ms
	if pass() {
		t.Fatal("a pass past a retention due skipped its walk")
	}
	if m.Stats().RemoteSegmentsDeleted == deleted {
		t.Fatal("the walk past retention.ms deleted nothing")
	}
}

// waitFor polls cond until it holds, for at most 10 s (the remote log's
// cache applies its own writes through the watch).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		<-tick.C
	}
}
