package broker

// AlterPartitionReassignments (key 45), version 0, and
// ListPartitionReassignments (key 46), version 0.
//
// A reassignment names the new replica list of a partition (null cancels,
// which is a no-op here). Until replication can bring new replicas in sync
// (the next step of the roadmap), a reassignment completes at once: the
// assignment switches, new live replicas join the ISR, removed ones leave it,
// and leadership moves to a target replica if the leader was removed — by
// compare-and-set, with the epoch bumped. ListPartitionReassignments
// therefore never has one in progress to report.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/kafka"
)

func (n *Node) handleAlterPartitionReassignments(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	live := n.liveBrokers()
	for _, t := range r.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode, rp.ErrorMessage = n.reassignOne(ctx, t.Topic, p.Partition, p.Replicas, live)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	n.reconcile()
	return kafka.Reply{Response: resp}, nil
}

func (n *Node) reassignOne(ctx context.Context, topic string, p int32, target []int32, live func(int32) bool) (int16, *string) {
	if target == nil {
		return kerr.NoReassignmentInProgress.Code, nil
	}
	seen := map[int32]bool{}
	for _, b := range target {
		if seen[b] {
			return kerr.InvalidReplicaAssignment.Code, errMessage(fmt.Errorf("broker %d listed twice", b))
		}
		seen[b] = true
		if !live(b) {
			return kerr.InvalidReplicaAssignment.Code, errMessage(fmt.Errorf("broker %d is not registered", b))
		}
	}
	if len(target) == 0 {
		return kerr.InvalidReplicaAssignment.Code, errMessage(errors.New("empty replica list"))
	}
	for attempt := 0; attempt < 5; attempt++ {
		st, ok := n.store.Partition(topic, p)
		if !ok {
			return kerr.UnknownTopicOrPartition.Code, nil
		}
		if slices.Equal(st.Replicas, target) {
			return 0, nil
		}
		d := controlplane.Reassign(st, target, live)
		_, err := n.store.UpdatePartition(ctx, d.State)
		if err == nil {
			n.logger.Info("partition reassigned", "topic", topic, "partition", p, "replicas", d.State.Replicas,
				"leader", d.State.Leader, "leader_epoch", d.State.LeaderEpoch)
			return 0, nil
		}
		if !errors.Is(err, controlplane.ErrConflict) {
			return adminErrorCode(err), errMessage(err)
		}
	}
	return kerr.NotController.Code, errMessage(errors.New("partition record kept changing; retry"))
}

func (n *Node) handleListPartitionReassignments(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.ListPartitionReassignmentsRequest)
	resp := r.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	return kafka.Reply{Response: resp}, nil
}
