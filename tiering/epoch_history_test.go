package tiering

import (
	"context"
	"io"
	"slices"
	"testing"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/partition"
)

// The leader keeps its epoch history from the partition's log start while
// local retention deletes the tiered segments, and each segment's .epochs
// object is that history up to the segment's end (Kafka uploads the
// leader-epoch checkpoint so): a follower rebuilt from the remote tail, as
// replica's bootstrap does, answers OffsetForLeaderEpoch for every epoch of
// the retained remote data as the leader does. Failed before (issue 16 item
// 4): the leader's history was cut at its local log start, and the object
// held only the segment's own entries.
func TestEpochHistoryFromTheLogStartSurvivesTiering(t *testing.T) {
	f := newFixture(t, nil)
	e0 := f.rep.LeaderEpoch()
	for _, e := range []int32{e0, e0 + 2, e0 + 4} {
		f.rep.SetLeadership(true, e)
		f.produce(t, 40)
	}
	history := f.rep.Log().Epochs()
	if len(history) != 3 {
		t.Fatalf("history %v, want three epochs", history)
	}
	m := f.manager(t, nil)
	m.RunOnce(testCtx(t), false)
	if local := f.rep.LocalLogStartOffset(); local <= history[2].StartOffset {
		t.Fatalf("local log start %d: the test wants local retention past the last epoch start %d", local, history[2].StartOffset)
	}
	if got := f.rep.Log().Epochs(); !slices.Equal(got, history) {
		t.Fatalf("leader history after local retention %v, want %v", got, history)
	}
	remote := f.meta.ListRemoteSegments(f.topic.ID, 0)
	tail := remote[len(remote)-1]
	rc, err := f.fs.GetRange(context.Background(), ObjectKey(tail, KindEpochs), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	es, err := DecodeEpochs(data)
	if err != nil {
		t.Fatal(err)
	}
	// One type since leaderepoch.Entry: compared as they are.
	if !slices.Equal(es, history) {
		t.Fatalf("epochs object of the tail segment %v, want the history %v", es, history)
	}
	ps, _ := f.store.Partition("events", 0)
	fol, err := partition.Open(partition.Options{Dir: t.TempDir(), Topic: "events", Partition: 0,
		Config: config.ResolveTopic(map[string]string{config.RemoteStorageEnable: "true"}, nil), LeaderEpoch: ps.LeaderEpoch, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer fol.Close()
	if err := fol.ResetFromRemote(partition.RemoteTail{Offset: tail.EndOffset + 1, LogStart: 0, Epochs: es}); err != nil {
		t.Fatal(err)
	}
	for e := e0; e < e0+4; e++ {
		le, lend := f.rep.Log().EndOffsetForEpoch(e)
		fe, fend := fol.Log().EndOffsetForEpoch(e)
		if le != fe || lend != fend {
			t.Errorf("epoch %d: the rebuilt follower answers %d %d, the leader %d %d", e, fe, fend, le, lend)
		}
	}
}
