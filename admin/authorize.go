package admin

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

// configDenied checks op (DescribeConfigs or AlterConfigs) on a config
// resource as Kafka does: a topic's on the topic
// (TOPIC_AUTHORIZATION_FAILED), a group's on the group
// (GROUP_AUTHORIZATION_FAILED), a broker's, a broker logger's or a client
// metrics subscription's on the cluster (CLUSTER_AUTHORIZATION_FAILED). It returns 0 when allowed, and
// for resource types it does not know (which the handler refuses).
func (h *Handlers) configDenied(req *kafka.Request, op acl.Operation, resourceType int8, name string) int16 {
	switch resourceType {
	case resourceTopic:
		if !h.authz.Authorize(req, op, acl.Topic(name)) {
			return kerr.TopicAuthorizationFailed.Code
		}
	case resourceGroup:
		if !h.authz.Authorize(req, op, acl.Group(name)) {
			return kerr.GroupAuthorizationFailed.Code
		}
	case resourceBroker, resourceBrokerLogger, resourceClientMetrics:
		if !h.authz.Authorize(req, op, acl.Cluster) {
			return kerr.ClusterAuthorizationFailed.Code
		}
	}
	return 0
}
