package partition

import (
	"testing"
	"time"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
)

// checkEndOffsets checks OffsetForLeaderEpoch's answers (requested epoch ->
// epoch, end offset).
func checkEndOffsets(t *testing.T, r *Replica, want map[int32][2]int64) {
	t.Helper()
	for req, w := range want {
		if e, end := r.Log().EndOffsetForEpoch(req); int64(e) != w[0] || end != w[1] {
			t.Errorf("end offset for epoch %d: epoch %d offset %d, want %d %d", req, e, end, w[0], w[1])
		}
	}
}

// With remote storage on, local retention keeps the leader-epoch history
// from the partition's log start, not the local one, as Kafka does: the
// remote data's epochs are still placed by OffsetForLeaderEpoch (a follower
// returning with a divergent tail in an old epoch truncates to where that
// epoch really ended), across a reopen; remote retention moving the log
// start cuts it there. Failed before (issue 16 item 4): local retention cut
// the history at the local log start, and epoch 1 ended at the local log
// start instead of 30.
func TestLocalRetentionKeepsTheEpochHistoryOfRemoteData(t *testing.T) {
	dir := t.TempDir()
	cfg := map[string]string{config.RemoteStorageEnable: "true", config.SegmentBytes: "1024",
		config.LocalRetentionBytes: "0", config.LocalRetentionMs: "0"}
	r := openFollower(t, dir, cfg, nil)
	for _, epoch := range []int32{1, 3, 5} {
		r.SetLeadership(true, epoch)
		for range 10 {
			if _, err := r.AppendLeader(build(t, batch.NoProducer(), 3)); err != nil {
				t.Fatal(err)
			}
		}
	}
	history := []segment.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 30}, {Epoch: 5, StartOffset: 60}}
	checkHistory(t, r, history...)
	segs := r.Log().Segments()
	active := segs[len(segs)-1].BaseOffset
	if active <= 60 {
		t.Fatalf("active segment at %d: the test wants local retention to pass every epoch start", active)
	}
	// Everything closed is uploaded; the remote log starts at 0.
	r.SetRemoteState(RemoteState{LogStart: 0, CopiedNext: active})
	if err := r.ApplyRetention(time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := r.LocalLogStartOffset(); got != active {
		t.Fatalf("local log start %d, want %d", got, active)
	}
	ends := map[int32][2]int64{1: {1, 30}, 2: {1, 30}, 3: {3, 60}, 4: {3, 60}, 5: {5, 90}}
	checkHistory(t, r, history...)
	checkEndOffsets(t, r, ends)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r = openFollower(t, dir, cfg, nil)
	defer r.Close()
	checkHistory(t, r, history...)
	checkEndOffsets(t, r, ends)

	// Remote retention moved the partition's log start to 45.
	r.SetRemoteState(RemoteState{LogStart: 45, CopiedNext: active})
	if err := r.ApplyRetention(time.Now()); err != nil {
		t.Fatal(err)
	}
	checkHistory(t, r, segment.EpochEntry{Epoch: 3, StartOffset: 45}, segment.EpochEntry{Epoch: 5, StartOffset: 60})
}

// A follower rebuilt from the remote tail keeps the tail's history from the
// partition's log start, so it places the epochs of every retained remote
// segment as the leader does, across a reopen. Failed before (issue 16 item
// 4): the history was cut at the restart offset, one entry.
func TestResetFromRemoteKeepsTheHistoryFromTheLogStart(t *testing.T) {
	dir := t.TempDir()
	cfg := map[string]string{config.RemoteStorageEnable: "true"}
	r := openFollower(t, dir, cfg, nil)
	err := r.ResetFromRemote(RemoteTail{Offset: 100, LogStart: 10, Epochs: []segment.EpochEntry{
		{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 30}, {Epoch: 5, StartOffset: 60}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []segment.EpochEntry{{Epoch: 1, StartOffset: 10}, {Epoch: 3, StartOffset: 30}, {Epoch: 5, StartOffset: 60}}
	ends := map[int32][2]int64{1: {1, 30}, 3: {3, 60}, 5: {5, 100}}
	checkHistory(t, r, want...)
	checkEndOffsets(t, r, ends)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r = openFollower(t, dir, cfg, nil)
	defer r.Close()
	checkHistory(t, r, want...)
	checkEndOffsets(t, r, ends)
}
