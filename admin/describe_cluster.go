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
	resp.ControllerID = h.controllerID()
	resp.EndpointType = 1
	if r.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = h.clusterAuthorizedOperations(req)
	}
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
	}
	return kafka.Reply{Response: resp}, nil
}
