package admin

// AlterPartitionReassignments (key 45), versions 0-1, and
// ListPartitionReassignments (key 46), version 0.
//
// A reassignment (KIP-455) names the new replica list of a partition; null
// cancels the one in progress. Its brokers must be registered, as in Kafka:
// a fenced broker (registered, but down) is accepted and its new replica
// starts fetching when it is back, so the reassignment stays in progress
// (and listed) until then; an id that never registered, or was
// unregistered, is refused with INVALID_REPLICA_ASSIGNMENT. The decisions are controlplane's
// StartReassignment and CancelReassignment: during the move the replicas
// are old ∪ new with the adding and removing replicas recorded in the
// partition state, the adding ones catch up as followers, and the
// controller completes the move once they are all in the ISR. Each change
// is a compare-and-set on the partition record. A reassignment that adds a
// replica on a broker being decommissioned (shale broker decommission) is
// refused with INVALID_REPLICA_ASSIGNMENT: the balancer is emptying it.
// ListPartitionReassignments lists the partitions with a reassignment in
// progress (all of them when no topic is named), with their replicas and
// the adding and removing ones.
//
// v1 (KIP-860): AllowReplicationFactorChange (true by default, and at v0):
// when false, a reassignment whose replica count differs from the
// partition's (its replicas before any move in progress) is
// INVALID_REPLICATION_FACTOR, as Kafka's ReplicationControlManager refuses
// it; the answer echoes the flag.
//
// With an authorizer, AlterPartitionReassignments needs Alter on the
// cluster and ListPartitionReassignments Describe on it, else the
// top-level error (and each partition named) is
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/kafka"
)

func (h *Handlers) handleAlterPartitionReassignments(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = r.AllowReplicationFactorChange
	live := h.liveBrokers()
	allowed := h.authz.Authorize(req, acl.OpAlter, acl.Cluster)
	if !allowed {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	}
	var draining map[int32]bool
	if allowed {
		var err error
		if draining, _, err = h.store.Draining(ctx); err != nil {
			h.logger.Warn("partition reassignment: reading the draining brokers", "err", err)
			resp.ErrorCode, resp.ErrorMessage = kerr.RequestTimedOut.Code, errMessage(err)
			allowed = false
		}
	}
	for _, t := range r.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			if !allowed {
				rp.ErrorCode = resp.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if p.Replicas != nil && !r.AllowReplicationFactorChange {
				if st, ok := h.store.Partition(t.Topic, p.Partition); ok {
					if rf := len(st.Replicas) - len(st.AddingReplicas); rf != len(p.Replicas) {
						rp.ErrorCode = kerr.InvalidReplicationFactor.Code
						rp.ErrorMessage = errMessage(fmt.Errorf("the replication factor is changed from %d to %d but AllowReplicationFactorChange is false", rf, len(p.Replicas)))
						rt.Partitions = append(rt.Partitions, rp)
						continue
					}
				}
			}
			rp.ErrorCode, rp.ErrorMessage = h.reassignOne(ctx, t.Topic, p.Partition, p.Replicas, h.store.Registered, live, draining)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	h.reconcile()
	return kafka.Reply{Response: resp}, nil
}

// reassignOne starts or cancels one partition's reassignment: target's
// brokers must be registered, and those it adds not draining; live decides
// who may lead.
func (h *Handlers) reassignOne(ctx context.Context, topic string, p int32, target []int32, registered, live func(int32) bool,
	draining map[int32]bool) (int16, *string) {
	if target != nil {
		if err := controlplane.ValidateReplicaAssignment(target, registered); err != nil {
			return adminErrorCode(err), errMessage(err)
		}
	}
	for attempt := 0; attempt < 5; attempt++ {
		st, ok := h.store.Partition(topic, p)
		if !ok {
			return kerr.UnknownTopicOrPartition.Code, nil
		}
		var d controlplane.Decision
		if target == nil {
			var err error
			if d, err = controlplane.CancelReassignment(st, live, h.uncleanElection(topic)); err != nil {
				return adminErrorCode(err), errMessage(err)
			}
		} else {
			if slices.Equal(st.Replicas, target) && !st.Reassigning() {
				return 0, nil
			}
			for _, r := range target {
				if draining[r] && !slices.Contains(st.Replicas, r) {
					return kerr.InvalidReplicaAssignment.Code, errMessage(fmt.Errorf("broker %d is being decommissioned (shale broker recommission %d to place replicas on it again)", r, r))
				}
			}
			d = controlplane.StartReassignment(st, target, live)
		}
		_, err := h.store.UpdatePartition(ctx, d.State)
		if err == nil {
			h.logger.Info("partition reassignment", "topic", topic, "partition", p, "cancel", target == nil,
				"replicas", d.State.Replicas, "adding", d.State.AddingReplicas, "removing", d.State.RemovingReplicas,
				"leader", d.State.Leader, "leader_epoch", d.State.LeaderEpoch)
			return 0, nil
		}
		if !errors.Is(err, controlplane.ErrConflict) {
			return adminErrorCode(err), errMessage(err)
		}
	}
	return kerr.NotController.Code, errMessage(errors.New("partition record kept changing; retry"))
}

func (h *Handlers) handleListPartitionReassignments(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.ListPartitionReassignmentsRequest)
	resp := r.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !h.authz.Authorize(req, acl.OpDescribe, acl.Cluster) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return kafka.Reply{Response: resp}, nil
	}
	add := func(st controlplane.PartitionState, rt *kmsg.ListPartitionReassignmentsResponseTopic) {
		if !st.Reassigning() {
			return
		}
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition = st.Partition
		rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas = st.Replicas, st.AddingReplicas, st.RemovingReplicas
		rt.Partitions = append(rt.Partitions, rp)
	}
	list := func(topic string, parts []int32) {
		rt := kmsg.NewListPartitionReassignmentsResponseTopic()
		rt.Topic = topic
		for _, st := range h.store.Partitions(topic) {
			if parts == nil || slices.Contains(parts, st.Partition) {
				add(st, &rt)
			}
		}
		if len(rt.Partitions) > 0 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if r.Topics == nil {
		for _, t := range h.store.Topics() {
			list(t.Name, nil)
		}
	}
	for _, t := range r.Topics {
		list(t.Topic, t.Partitions)
	}
	return kafka.Reply{Response: resp}, nil
}

// uncleanElection is the topic's unclean.leader.election.enable.
func (h *Handlers) uncleanElection(topic string) bool {
	t, ok := h.store.Topic(topic)
	return ok && h.replicas.TopicConfig(t).Bool(config.UncleanLeaderElection)
}
