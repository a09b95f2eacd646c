package group

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/partition"
)

// switchLeader leads offsets partition 0 while leading is set.
type switchLeader struct {
	rep     *partition.Replica
	leading atomic.Bool
}

func (s *switchLeader) Leader(topic string, p int32) (*partition.Replica, error) {
	if topic != OffsetsTopic || p != 0 {
		return nil, partition.ErrUnknownTopicOrPartition
	}
	if !s.leading.Load() {
		return nil, partition.ErrNotLeader
	}
	return s.rep, nil
}

// listGroupsOnce sends one ListGroups, with no retry.
func listGroupsOnce(t *testing.T, c *Coordinator) *kmsg.ListGroupsResponse {
	t.Helper()
	req := kmsg.NewListGroupsRequest()
	req.Version = 4
	ctx := context.Background()
	reply, err := c.handleListGroups(ctx, &kafka.Request{Key: req.Key(), Version: req.Version, Msg: &req})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := reply.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.ListGroupsResponse)
}

// LeadershipChanged loads a partition this node leads with no request for
// any of its groups; ListGroups answers COORDINATOR_LOAD_IN_PROGRESS with
// no groups while it loads (here held by taking every load slot), then
// every group; losing leadership unloads the groups.
func TestLeadershipChangedLoadsEagerly(t *testing.T) {
	rep := openOffsetsReplica(t, t.TempDir())
	t.Cleanup(func() { rep.Close() })
	c1 := newTestCoordinator(t, rep, 0)
	commitOne(t, c1, "a", "t", 0, 1)
	commitOne(t, c1, "b", "t", 0, 2)
	c1.Close()

	leaders := &switchLeader{rep: rep}
	leaders.leading.Store(true)
	c := New(Config{Partitions: 1, MinSessionTimeout: time.Second, Logger: quietLogger()}, leaders, nil)
	t.Cleanup(c.Close)
	release := c.rt.HoldLoads() // no load may run yet
	c.LeadershipChanged(0)
	if r := listGroupsOnce(t, c); r.ErrorCode != kerr.CoordinatorLoadInProgress.Code || len(r.Groups) != 0 {
		t.Fatalf("ListGroups while loading: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.Groups)
	}
	release()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		r := listGroupsOnce(t, c)
		if r.ErrorCode == 0 {
			var ids []string
			for _, g := range r.Groups {
				ids = append(ids, g.Group)
			}
			slices.Sort(ids)
			if !slices.Equal(ids, []string{"a", "b"}) {
				t.Fatalf("ListGroups after the load: %v", ids)
			}
			break
		}
		if r.ErrorCode != kerr.CoordinatorLoadInProgress.Code || time.Now().After(deadline) {
			t.Fatalf("ListGroups: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		<-tick.C
	}

	leaders.leading.Store(false)
	c.LeadershipChanged(0)
	if _, loaded := c.rt.Loaded(0); loaded {
		t.Fatal("the partition's groups are still loaded after this node stopped leading it")
	}
	if r := listGroupsOnce(t, c); r.ErrorCode != 0 || len(r.Groups) != 0 {
		t.Fatalf("ListGroups of a node that leads nothing: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.Groups)
	}
}
