package tiering

import (
	"strconv"
	"testing"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/partition"
)

// follow opens a second replica of the fixture's partition (node 2's) and
// copies the leader's log into it as a follower does, in fetches of about
// fetchBytes: the same batches, in segments of its own config's size.
func (f *fixture) follow(t *testing.T, cfgs map[string]string, fetchBytes int) *partition.Replica {
	t.Helper()
	ps, _ := f.store.Partition("events", 0)
	rep, err := partition.Open(partition.Options{Dir: t.TempDir(), Topic: "events", Partition: 0,
		Config: config.ResolveTopic(cfgs, nil), LeaderEpoch: ps.LeaderEpoch, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rep.Close() })
	hw := f.rep.HighWatermark()
	for off := int64(0); off < hw; {
		b, err := f.rep.Log().ReadBytes(off, fetchBytes, hw, true)
		if err != nil || len(b) == 0 {
			t.Fatalf("read at %d: %d bytes, %v", off, len(b), err)
		}
		if err := rep.AppendFollower(b, hw); err != nil {
			t.Fatal(err)
		}
		off = rep.Log().LogEndOffset()
	}
	return rep
}

// KAFKA-20732's shape: right after a leader change, remote retention must
// not count bytes twice (the new leader's local segments that the old
// leader's uploads already hold, or the overlap of two leaders' copies of
// the same offsets) and delete remote data still within retention.bytes or
// retention.ms. Node 1 leads and uploads; node 2, a follower with its own
// segment boundaries that kept every local segment, is elected and runs its
// passes with the data within retention by less than a segment. Failed
// before remote retention counted bytes by the offsets they hold (the new
// leader deleted the first remote segments on its first pass).
func TestRemoteRetentionRightAfterALeaderChange(t *testing.T) {
	cfgs := map[string]string{config.RemoteStorageEnable: "true", config.SegmentBytes: "2048",
		config.LocalRetentionBytes: "-1", config.LocalRetentionMs: "-1"}
	f := newFixture(t, cfgs)
	f.produce(t, 200)
	// Node 2's segments end elsewhere: segment.ms rolls at other times on
	// each node, and a segment.bytes change reaches the nodes at different
	// moments; here node 2 rolls at 3000 bytes.
	followerCfgs := map[string]string{config.SegmentBytes: "3000"}
	for k, v := range cfgs {
		if _, set := followerCfgs[k]; !set {
			followerCfgs[k] = v
		}
	}
	rep2 := f.follow(t, followerCfgs, 1500)
	m1 := f.manager(t, nil)
	m1.RunOnce(testCtx(t), false)
	remote := f.meta.ListRemoteSegments(f.topic.ID, 0)
	if len(remote) < 5 {
		t.Fatalf("%d remote segments: the test needs several", len(remote))
	}
	var logBytes int64
	for _, s := range f.rep.Log().Segments() {
		logBytes += s.Size
	}
	var sameBounds int
	leaderBases := map[int64]bool{}
	for _, s := range f.rep.Log().Segments() {
		leaderBases[s.BaseOffset] = true
	}
	for _, s := range rep2.Log().Segments() {
		if leaderBases[s.BaseOffset] {
			sameBounds++
		}
	}
	if sameBounds == len(rep2.Log().Segments()) {
		t.Fatal("the follower rolled where the leader did: the test needs other boundaries")
	}
	// Within retention, by less than a segment: the log is logBytes, and
	// retention deletes the oldest segment once the rest alone still reach
	// retention.bytes (as Kafka does), so it keeps every segment with
	// retention.bytes just above logBytes minus the first segment. Every
	// record is seconds old, retention.ms an hour.
	first := f.rep.Log().Segments()[0].Size
	withRetention := map[string]string{config.RetentionBytes: itoa(logBytes - first + 100), config.RetentionMs: "3600000"}
	for k, v := range cfgs {
		withRetention[k] = v
	}
	f.rep.SetConfig(config.ResolveTopic(withRetention, nil))
	withRetention[config.SegmentBytes] = "3000"
	rep2.SetConfig(config.ResolveTopic(withRetention, nil))
	m1.RunOnce(testCtx(t), false)
	if st := m1.Stats(); st.RemoteSegmentsDeleted != 0 {
		t.Fatalf("the first leader deleted %d remote segments within retention", st.RemoteSegmentsDeleted)
	}

	// Node 2 is elected.
	ps, _ := f.store.Partition("events", 0)
	ps.Replicas, ps.ISR, ps.Leader, ps.LeaderEpoch = []int32{1, 2}, []int32{1, 2}, 2, ps.LeaderEpoch+1
	if _, err := f.store.UpdatePartition(testCtx(t), ps); err != nil {
		t.Fatal(err)
	}
	f.rep.SetLeadership(false, ps.LeaderEpoch)
	rep2.SetLeadership(true, ps.LeaderEpoch)
	m2 := f.manager(t, func(c *Config) {
		c.NodeID = 2
		c.Replicas = func() []*partition.Replica { return []*partition.Replica{rep2} }
	})
	for range 3 {
		m2.RunOnce(testCtx(t), false)
	}
	if st := m2.Stats(); st.RemoteSegmentsDeleted != 0 {
		t.Errorf("the new leader deleted %d remote segments within retention (stats %+v)", st.RemoteSegmentsDeleted, st)
	}
	if got := rep2.LogStartOffset(); got != 0 {
		t.Errorf("log start %d after the leader change, want 0", got)
	}
	if start, ok := controlplane.RemoteLogStartOffset(f.meta.ListRemoteSegments(f.topic.ID, 0)); !ok || start != 0 {
		t.Errorf("remote log start %d %v, want 0", start, ok)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
