package admin

// DescribeCluster (key 60), versions 0-2.
//
//   - v0: brokers, cluster id, controller (KIP-700).  v1: EndpointType.
//   - v2: IncludeFencedBrokers and IsFenced (KIP-1073): asked, the answer
//     also lists the registered brokers that are down (fenced), at their
//     last known endpoints; otherwise only the live brokers, as Metadata.
//
// Like Metadata's broker list it needs no ACL, as in Kafka. Asked for the
// cluster's authorized operations (KIP-430), it answers them to a
// principal with Describe on the cluster, and 0 to others, as Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

// clusterAuthorizedOperations is KIP-430's bitfield of the cluster: 0
// without Describe on it, as Kafka answers.
func (h *Handlers) clusterAuthorizedOperations(req *kafka.Request) int32 {
	if !h.authz.Permits(req, acl.OpDescribe, acl.Cluster) {
		return 0
	}
	return h.authz.AuthorizedOperations(req, acl.Cluster)
}

func (h *Handlers) handleDescribeCluster(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.DescribeClusterRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterID = h.store.ClusterID()
	resp.EndpointType = 1
	if r.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = h.clusterAuthorizedOperations(req)
	}
	listed := map[int32]bool{}
	for _, reg := range h.store.Registrations() {
		if reg.Fenced && !r.IncludeFencedBrokers {
			continue
		}
		b := reg.Broker
		host, port, ok := kafka.AdvertisedAddr(b.Listeners, req.ListenerName(), b.Host, b.Port)
		if !ok {
			continue
		}
		mb := kmsg.NewDescribeClusterResponseBroker()
		mb.NodeID, mb.Host, mb.Port, mb.IsFenced = b.NodeID, host, port, reg.Fenced
		if b.Rack != "" {
			rack := b.Rack
			mb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, mb)
		listed[b.NodeID] = true
	}
	resp.ControllerID = h.reportedController(listed)
	return kafka.Reply{Response: resp}, nil
}

// reportedController is the controller id a Metadata or DescribeCluster
// answer names: the holder of the controller lease when the answer lists
// it, else this node when it does (any node serves the requests a client
// sends to its controller, as any KRaft broker does), else -1. A client
// refuses a controller id missing from the broker list of the same answer
// (franz-go: "broker replied that the controller broker is 4, but did not
// reply with that broker in the broker list"), which a node answered while
// its cache had the new holder's lease but not yet its registration.
func (h *Handlers) reportedController(listed map[int32]bool) int32 {
	return reportedController(h.controllerID(), h.cfg.NodeID, listed)
}

func reportedController(holder, self int32, listed map[int32]bool) int32 {
	switch {
	case holder >= 0 && listed[holder]:
		return holder
	case listed[self]:
		return self
	}
	return -1
}
