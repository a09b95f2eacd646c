package share

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/partition"
)

// oneStateReplica leads the one __share_group_state partition.
type oneStateReplica struct{ rep *partition.Replica }

func (o oneStateReplica) Leader(string, int32) (*partition.Replica, error) { return o.rep, nil }

// TestReadShareGroupStateAndSummary: ReadShareGroupState and
// ReadShareGroupStateSummary answer a share-partition's persisted state
// from one read of it, StartOffset -1 for one without state, and
// CLUSTER_AUTHORIZATION_FAILED to a principal without ClusterAction.
func TestReadShareGroupStateAndSummary(t *testing.T) {
	rep, err := partition.Open(partition.Options{Dir: t.TempDir(), Topic: StateTopic, Partition: 0,
		Config: config.ResolveTopic(nil, nil), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rep.Close() })
	rep.SetLeadership(true, 0)
	az := authz.New(authz.Config{SuperUsers: []string{"User:broker"}})
	c := NewStateCoordinator(az, oneStateReplica{rep}, 1, 0)
	tid := [16]byte{1, 2, 3}
	s := Snapshot{StateEpoch: 2, LeaderEpoch: 3, StartOffset: 5, Batches: []StateBatch{
		{First: 5, Last: 7, State: Acknowledged, DeliveryCount: 1},
		{First: 8, Last: 8, State: Available, DeliveryCount: 2},
		{First: 9, Last: 10, State: Archived, DeliveryCount: 5},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Write(ctx, StateKey{Group: "g", TopicID: tid, Partition: 0}, s); err != nil {
		t.Fatal(err)
	}
	serve := func(h kafka.Handler, principal string, msg kmsg.Request) kmsg.Response {
		t.Helper()
		reply, err := h(ctx, &kafka.Request{Key: msg.Key(), Version: msg.GetVersion(), Msg: msg, Conn: &kafka.ConnInfo{Principal: principal}})
		if err != nil {
			t.Fatal(err)
		}
		return reply.Response
	}

	read := kmsg.NewPtrReadShareGroupStateRequest()
	read.GroupID = "g"
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = tid
	for p := range int32(2) {
		rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
	}
	read.Topics = append(read.Topics, rt)
	sum := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	sum.Version, sum.GroupID = 1, "g"
	st := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	st.TopicID = tid
	for p := range int32(2) {
		sp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
		sp.Partition = p
		st.Partitions = append(st.Partitions, sp)
	}
	sum.Topics = append(sum.Topics, st)

	rr := serve(c.handleReadShareGroupState, "User:broker", read).(*kmsg.ReadShareGroupStateResponse)
	got := rr.Topics[0].Partitions
	if p := got[0]; p.ErrorCode != 0 || p.StateEpoch != 2 || p.StartOffset != 5 || len(p.StateBatches) != 3 ||
		p.StateBatches[2].FirstOffset != 9 || p.StateBatches[2].LastOffset != 10 || p.StateBatches[2].DeliveryState != int8(Archived) || p.StateBatches[2].DeliveryCount != 5 {
		t.Fatalf("read of the written state: %+v", p)
	}
	if p := got[1]; p.Partition != 1 || p.ErrorCode != 0 || p.StateEpoch != 0 || p.StartOffset != -1 || len(p.StateBatches) != 0 {
		t.Fatalf("read of a share-partition without state: %+v", p)
	}
	sr := serve(c.handleReadShareGroupStateSummary, "User:broker", sum).(*kmsg.ReadShareGroupStateSummaryResponse)
	gs := sr.Topics[0].Partitions
	// DeliveryCompleteCount: the 5 records acknowledged or archived above;
	// -1 (unknown) for a share-partition without state.
	if p := gs[0]; p.ErrorCode != 0 || p.StateEpoch != 2 || p.LeaderEpoch != 3 || p.StartOffset != 5 || p.DeliveryCompleteCount != 5 {
		t.Fatalf("summary of the written state: %+v", p)
	}
	if p := gs[1]; p.Partition != 1 || p.ErrorCode != 0 || p.StartOffset != -1 || p.LeaderEpoch != -1 || p.StateEpoch != 0 || p.DeliveryCompleteCount != -1 {
		t.Fatalf("summary of a share-partition without state: %+v", p)
	}

	rr = serve(c.handleReadShareGroupState, "User:alice", read).(*kmsg.ReadShareGroupStateResponse)
	sr = serve(c.handleReadShareGroupStateSummary, "User:alice", sum).(*kmsg.ReadShareGroupStateSummaryResponse)
	for i := range 2 {
		if p := rr.Topics[0].Partitions[i]; p.ErrorCode != kerr.ClusterAuthorizationFailed.Code || p.StartOffset != -1 || len(p.StateBatches) != 0 {
			t.Fatalf("read without ClusterAction: %+v", p)
		}
		if p := sr.Topics[0].Partitions[i]; p.ErrorCode != kerr.ClusterAuthorizationFailed.Code || p.StartOffset != -1 || p.StateEpoch != 0 {
			t.Fatalf("summary without ClusterAction: %+v", p)
		}
	}
}
