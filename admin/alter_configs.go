package admin

// AlterConfigs (key 33), versions 0-2, and IncrementalAlterConfigs (key 44),
// versions 0-1.
//
//   - AlterConfigs replaces a topic's whole set of explicit configs (v2 is
//     flexible).  IncrementalAlterConfigs applies SET (0), DELETE (1),
//     APPEND (2) and SUBTRACT (3) to list configs (v1 is flexible).
//
// Every value is validated with Kafka's names and types before anything is
// written (INVALID_CONFIG); ValidateOnly writes nothing. Topic, client
// metrics (type 16, KIP-714: client_metrics.go) and group (type 32,
// KIP-848/KIP-932: group_configs.go) resources can be altered; broker
// settings are static (INVALID_REQUEST).
//
// A change that would leave __consumer_offsets or __transaction_state
// with a cleanup.policy other than compact is POLICY_VIOLATION
// (internal_topics.go); an AlterConfigs of one of them must name
// cleanup.policy=compact, since it replaces the whole set.
//
// With an authorizer: AlterConfigs on the topic (TOPIC_AUTHORIZATION_FAILED),
// on the group (GROUP_AUTHORIZATION_FAILED) or, for a broker or client
// metrics, on the cluster (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/clientmetrics"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/kafka"
)

// alterTopicConfigs validates and stores a topic's new explicit configs.
func (h *Handlers) alterTopicConfigs(ctx context.Context, req *kafka.Request, resType int8, topic string, validateOnly bool, apply func(old map[string]string) (map[string]string, error)) (int16, *string) {
	if code := h.configDenied(req, acl.OpAlterConfigs, resType, topic); code != 0 {
		return code, nil
	}
	if resType == resourceClientMetrics {
		return h.alterClientMetrics(ctx, topic, validateOnly, apply)
	}
	if resType == resourceGroup {
		return h.alterGroupConfigs(ctx, topic, validateOnly, apply)
	}
	if resType != resourceTopic {
		return kerr.InvalidRequest.Code, errMessage(fmt.Errorf("only topic configs can be altered"))
	}
	t, ok := h.store.Topic(topic)
	if !ok {
		return kerr.UnknownTopicOrPartition.Code, errMessage(fmt.Errorf("unknown topic %q", topic))
	}
	next, err := apply(maps.Clone(t.Configs))
	if err == nil {
		for k, v := range next {
			if err = config.ValidateTopicValue(k, v); err != nil {
				break
			}
		}
	}
	if err != nil {
		return kerr.InvalidConfig.Code, errMessage(err)
	}
	if internalTopic(topic) {
		if err := h.internalConfigs(topic, next); err != nil {
			return kerr.PolicyViolation.Code, errMessage(err)
		}
	}
	if validateOnly {
		return 0, nil
	}
	if err := h.store.SetTopicConfigs(ctx, topic, next); err != nil {
		return adminErrorCode(err), errMessage(err)
	}
	h.reconcile()
	return 0, nil
}

func (h *Handlers) handleAlterConfigs(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.AlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, res := range r.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		rr.ErrorCode, rr.ErrorMessage = h.alterTopicConfigs(ctx, req, int8(res.ResourceType), res.ResourceName, r.ValidateOnly,
			func(map[string]string) (map[string]string, error) {
				next := map[string]string{}
				for _, c := range res.Configs {
					if c.Value != nil {
						next[c.Name] = *c.Value
					}
				}
				return next, nil
			})
		resp.Resources = append(resp.Resources, rr)
	}
	return kafka.Reply{Response: resp}, nil
}

func (h *Handlers) handleIncrementalAlterConfigs(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.IncrementalAlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, res := range r.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		rr.ErrorCode, rr.ErrorMessage = h.alterTopicConfigs(ctx, req, int8(res.ResourceType), res.ResourceName, r.ValidateOnly,
			func(cur map[string]string) (map[string]string, error) {
				if cur == nil {
					cur = map[string]string{}
				}
				for _, c := range res.Configs {
					val := ""
					if c.Value != nil {
						val = *c.Value
					}
					switch c.Op {
					case 0: // SET
						cur[c.Name] = val
					case 1: // DELETE
						delete(cur, c.Name)
					case 2, 3: // APPEND, SUBTRACT on list configs
						key, ok := config.LookupTopicKey(c.Name)
						if res.ResourceType == resourceClientMetrics {
							// metrics and match are lists, default empty.
							key, ok = &config.TopicKey{Type: config.TypeList}, c.Name == clientmetrics.ConfigMetrics || c.Name == clientmetrics.ConfigMatch
						}
						if !ok || key.Type != config.TypeList {
							return nil, fmt.Errorf("%w: %s is not a list config", config.ErrInvalidConfig, c.Name)
						}
						base, ok := cur[c.Name]
						if !ok {
							base = key.Default
						}
						items := slices.DeleteFunc(strings.Split(base, ","), func(s string) bool { return s == "" })
						if c.Op == 2 {
							if !slices.Contains(items, val) {
								items = append(items, val)
							}
						} else {
							items = slices.DeleteFunc(items, func(s string) bool { return s == val })
						}
						cur[c.Name] = strings.Join(items, ",")
					default:
						return nil, fmt.Errorf("%w: unknown operation %d", config.ErrInvalidConfig, c.Op)
					}
				}
				return cur, nil
			})
		resp.Resources = append(resp.Resources, rr)
	}
	return kafka.Reply{Response: resp}, nil
}
