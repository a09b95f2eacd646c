package admin

// ElectLeaders (key 43), versions 0-2.
//
//   - v1: ElectionType (0 preferred, 1 unclean) and a top-level ErrorCode.
//   - v2: flexible versions.
//
// PREFERRED moves leadership to the first assigned replica when it is live
// and in sync (ELECTION_NOT_NEEDED when it already leads,
// PREFERRED_LEADER_NOT_AVAILABLE when it cannot). UNCLEAN elects a live
// replica for a partition that has no leader (ELECTION_NOT_NEEDED when it
// has one, ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is live). Either
// way the change is a compare-and-set on the partition record, and the
// leader epoch is bumped.
//
// With an authorizer it needs Alter on the cluster: else every partition
// named, and the top-level error, is CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/kafka"
)

func (h *Handlers) liveBrokers() func(int32) bool {
	live := map[int32]bool{}
	for _, b := range h.store.Brokers() {
		live[b.NodeID] = true
	}
	return func(b int32) bool { return live[b] }
}

func (h *Handlers) handleElectLeaders(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.ElectLeadersRequest)
	resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
	if !h.authz.Authorize(req, acl.OpAlter, acl.Cluster) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		for _, t := range r.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return kafka.Reply{Response: resp}, nil
	}
	live := h.liveBrokers()
	targets := map[string][]int32{}
	if r.Topics == nil {
		for _, t := range h.store.Topics() {
			for _, st := range h.store.Partitions(t.Name) {
				targets[t.Name] = append(targets[t.Name], st.Partition)
			}
		}
	}
	for _, t := range r.Topics {
		targets[t.Topic] = append(targets[t.Topic], t.Partitions...)
	}
	for topic, parts := range targets {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = topic
		for _, p := range parts {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition = p
			rp.ErrorCode, rp.ErrorMessage = h.electOne(ctx, topic, p, r.ElectionType, live)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	h.reconcile()
	return kafka.Reply{Response: resp}, nil
}

func (h *Handlers) electOne(ctx context.Context, topic string, p int32, electionType int8, live func(int32) bool) (int16, *string) {
	for attempt := 0; attempt < 5; attempt++ {
		st, ok := h.store.Partition(topic, p)
		if !ok {
			return kerr.UnknownTopicOrPartition.Code, nil
		}
		var d controlplane.Decision
		if electionType == 1 { // UNCLEAN
			if st.Leader >= 0 && live(st.Leader) {
				return kerr.ElectionNotNeeded.Code, nil
			}
			// The controller's view, with unclean election on: a replica
			// back with a new disk (it holds nothing) leads only when no
			// other replica is live, and the ISR/ELR bookkeeping is the
			// controller's, so its next pass keeps the choice.
			minISR := 1
			if t, ok := h.store.Topic(topic); ok && h.replicas != nil {
				minISR = int(h.replicas.TopicConfig(t).Int64(config.MinInsyncReplicas))
			}
			d = controlplane.Elect(st, h.store.ElectionViews()(st, minISR, true))
			if d.State.Leader < 0 {
				return kerr.EligibleLeadersNotAvailable.Code, nil
			}
		} else {
			if len(st.Replicas) > 0 && st.Leader == st.Replicas[0] {
				return kerr.ElectionNotNeeded.Code, nil
			}
			d = controlplane.ElectPreferred(st, live)
			if !d.Changed {
				return kerr.PreferredLeaderNotAvailable.Code, nil
			}
		}
		_, err := h.store.UpdatePartition(ctx, d.State)
		if err == nil {
			h.logger.Info("leader elected by request", "topic", topic, "partition", p,
				"leader", d.State.Leader, "leader_epoch", d.State.LeaderEpoch, "unclean", electionType == 1)
			return 0, nil
		}
		if !errors.Is(err, controlplane.ErrConflict) {
			return adminErrorCode(err), errMessage(err)
		}
	}
	return kerr.NotController.Code, errMessage(errors.New("partition record kept changing; retry"))
}
