package admin

// ListConfigResources (key 74), versions 0-1.
//
//   - v0 (Kafka's ListClientMetricsResources, KIP-714): the names of the
//     client metrics subscriptions (CLIENT_METRICS resources).
//   - v1 (renamed, KIP-1142): ResourceTypes filters by config resource
//     type, each answered with its type: TOPIC (2) every topic, BROKER (4)
//     and BROKER_LOGGER (8) every live broker's id, CLIENT_METRICS (16)
//     the subscriptions, GROUP (32) the groups that have group configs.
//     An empty list is all five. A type
//     outside them is UNSUPPORTED_VERSION, as Kafka answers.
//
// It needs DescribeConfigs on the cluster, as in Kafka
// (CLUSTER_AUTHORIZATION_FAILED, nothing listed).

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

// resourceGroup is a group's config resource (KIP-848, KIP-932:
// group_configs.go).
const resourceGroup = 32

var listableResourceTypes = []int8{resourceTopic, resourceBroker, resourceBrokerLogger, resourceClientMetrics, resourceGroup}

func (h *Handlers) handleListConfigResources(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.ListConfigResourcesRequest)
	resp := r.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	if !h.authz.Authorize(req, acl.OpDescribeConfigs, acl.Cluster) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return kafka.Reply{Response: resp}, nil
	}
	types := r.ResourceTypes
	switch {
	case r.Version == 0:
		types = []int8{resourceClientMetrics}
	case len(types) == 0:
		types = listableResourceTypes
	}
	for _, t := range types {
		if !slices.Contains(listableResourceTypes, t) {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return kafka.Reply{Response: resp}, nil
		}
	}
	add := func(typ int8, name string) {
		c := kmsg.NewListConfigResourcesResponseConfigResource()
		c.Name, c.Type = name, typ
		resp.ConfigResources = append(resp.ConfigResources, c)
	}
	for _, t := range types {
		switch t {
		case resourceTopic:
			for _, tp := range h.store.Topics() {
				add(t, tp.Name)
			}
		case resourceBroker, resourceBrokerLogger:
			for _, b := range h.store.Brokers() {
				add(t, strconv.Itoa(int(b.NodeID)))
			}
		case resourceClientMetrics:
			names, err := h.clientMetricsNames(ctx)
			if err != nil {
				h.logger.Warn("ListConfigResources: client metrics subscriptions", "err", err)
				resp.ErrorCode = adminErrorCode(fmt.Errorf("list client metrics: %w", err))
				resp.ConfigResources = nil
				return kafka.Reply{Response: resp}, nil
			}
			for _, n := range names {
				add(t, n)
			}
		case resourceGroup:
			names, err := h.groupConfigNames(ctx)
			if err != nil {
				h.logger.Warn("ListConfigResources: group configs", "err", err)
				resp.ErrorCode = adminErrorCode(fmt.Errorf("list group configs: %w", err))
				resp.ConfigResources = nil
				return kafka.Reply{Response: resp}, nil
			}
			for _, n := range names {
				add(t, n)
			}
		}
	}
	return kafka.Reply{Response: resp}, nil
}
