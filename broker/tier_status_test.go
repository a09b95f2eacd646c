package broker

import (
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment/batch"
)

func TestTierStatusOf(t *testing.T) {
	rep, err := partition.Open(partition.Options{Dir: t.TempDir(), Topic: "events", Partition: 0,
		Config: config.ResolveTopic(map[string]string{config.SegmentBytes: "2048"}, nil), LeaderEpoch: 0,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	rep.SetLeadership(true, 0) // a replica opens as a follower
	for i := range 40 {
		b, err := batch.Build(nil, batch.NoProducer(), []batch.Record{{Value: fmt.Appendf(nil, "%0200d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rep.AppendLeader(b); err != nil {
			t.Fatal(err)
		}
	}
	segs := rep.Log().Segments()
	if len(segs) < 4 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	// The first two closed segments are tiered, the second being deleted
	// locally already; a third upload has only started.
	if _, err := rep.DeleteRecordsBefore(segs[1].BaseOffset); err != nil {
		t.Fatal(err)
	}
	remote := []controlplane.RemoteSegment{
		{BaseOffset: segs[0].BaseOffset, EndOffset: segs[0].NextOffset - 1, Size: segs[0].Size, State: controlplane.CopyFinished},
		{BaseOffset: segs[1].BaseOffset, EndOffset: segs[1].NextOffset - 1, Size: segs[1].Size, State: controlplane.CopyFinished},
		{BaseOffset: segs[2].BaseOffset, EndOffset: segs[2].NextOffset - 1, Size: segs[2].Size, State: controlplane.CopyStarted},
	}
	list := func(topic string, p int32) []controlplane.RemoteSegment {
		if topic == "events" && p == 0 {
			return remote
		}
		return nil
	}
	st := tierStatusOf(7, []*partition.Replica{rep}, list, "")
	if st.NodeID != 7 || len(st.Partitions) != 1 {
		t.Fatalf("status %+v", st)
	}
	p := st.Partitions[0]
	closed, lagBytes := 0, int64(0)
	for _, s := range segs[2:] {
		if !s.Active {
			closed++
			lagBytes += s.Size
		}
	}
	want := TierPartitionStatus{Topic: "events", Partition: 0, LogStartOffset: 0, LocalLogStartOffset: segs[1].BaseOffset,
		HighWatermark: 40, LastTieredOffset: segs[1].NextOffset - 1, RemoteSegments: 2, RemoteBytes: segs[0].Size + segs[1].Size,
		UploadLagSegments: closed, UploadLagBytes: lagBytes, UploadLagOffsets: 40 - segs[1].NextOffset}
	if p != want {
		t.Fatalf("status\n got %+v\nwant %+v", p, want)
	}
	if got := tierStatusOf(7, []*partition.Replica{rep}, list, "other"); len(got.Partitions) != 0 {
		t.Fatalf("topic filter: %+v", got)
	}
	// Without tiering: no remote data, everything closed is lag.
	p = tierStatusOf(7, []*partition.Replica{rep}, nil, "events").Partitions[0]
	if p.LogStartOffset != p.LocalLogStartOffset || p.LastTieredOffset != -1 || p.RemoteSegments != 0 || p.UploadLagOffsets != 40 {
		t.Fatalf("without tiering: %+v", p)
	}
}
