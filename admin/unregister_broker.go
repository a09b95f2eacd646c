package admin

// UnregisterBroker (key 64), version 0 (KIP-631).
//
// Removes a decommissioned broker's registration for good
// (controlplane.Store.UnregisterBroker): a broker that is down stays
// registered, fenced, so that replicas can still be placed on it, until an
// operator unregisters it; its id is then unknown and
// AlterPartitionReassignments, CreateTopics and CreatePartitions refuse it.
// An id that is not registered is BROKER_ID_NOT_REGISTERED. Unlike
// Kafka, which fences a live broker it unregisters and lets it register
// again, Shale refuses a broker with a live session (INVALID_REQUEST,
// "stop it before unregistering it"). Partition records that name the
// broker are left as they are: reassign them first.
//
// In Kafka the request goes to the controller; here any node serves it,
// since every node writes the control plane. With an authorizer it needs
// Alter on the cluster (CLUSTER_AUTHORIZATION_FAILED), as Kafka's
// controller requires.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (h *Handlers) handleUnregisterBroker(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.UnregisterBrokerRequest)
	resp := r.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	if !h.authz.Authorize(req, acl.OpAlter, acl.Cluster) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return kafka.Reply{Response: resp}, nil
	}
	if err := h.store.UnregisterBroker(ctx, r.BrokerID); err != nil {
		resp.ErrorCode, resp.ErrorMessage = adminErrorCode(err), errMessage(err)
		return kafka.Reply{Response: resp}, nil
	}
	return kafka.Reply{Response: resp}, nil
}
