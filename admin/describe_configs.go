package admin

// DescribeConfigs (key 32), versions 0-4.
//
//   - v1: Source and synonyms (Shale reports the value's own source, no
//     synonym chain).  v3: ConfigType and Documentation.  v4: flexible.
//
// Topic resources list every topic config Shale knows with its effective
// value and where it came from (topic, broker default, Kafka default).
// Broker resources list the broker's own settings under Kafka's names.
// Client metrics resources (type 16, KIP-714) list a subscription's
// metrics, interval.ms and match (client_metrics.go). Group resources
// (type 32, KIP-848/KIP-932) list every group config Shale builds with the
// group's value (source GROUP_CONFIG) or the node's default
// (group_configs.go).
//
// With an authorizer: DescribeConfigs on the topic (TOPIC_AUTHORIZATION_FAILED),
// on the group (GROUP_AUTHORIZATION_FAILED) or, for a broker or client
// metrics, on the cluster (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/kafka"
)

const (
	resourceTopic        = 2
	resourceBroker       = 4
	resourceBrokerLogger = 8
	// resourceClientMetrics is a KIP-714 client metrics subscription
	// (client_metrics.go).
	resourceClientMetrics = 16
)

func (h *Handlers) brokerSettings() map[string]string {
	return map[string]string{
		"broker.id":                  strconv.Itoa(int(h.cfg.NodeID)),
		"auto.create.topics.enable":  strconv.FormatBool(h.cfg.AutoCreateTopics),
		"num.partitions":             strconv.Itoa(int(h.cfg.NumPartitions)),
		"default.replication.factor": strconv.Itoa(int(h.cfg.DefaultReplicationFactor)),
		"socket.request.max.bytes":   strconv.Itoa(int(h.cfg.MaxRequestBytes)),
		"advertised.listeners":       h.cfg.AdvertisedListenerList(),
		"listeners":                  h.cfg.Listeners,
		"inter.broker.listener.name": h.cfg.InterBrokerListenerName,
		"ssl.client.auth":            h.cfg.SSLClientAuth,
		"broker.rack":                h.cfg.Rack,
		"replica.selector.class":     h.cfg.ReplicaSelectorClass,
	}
}

func (h *Handlers) handleDescribeConfigs(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.DescribeConfigsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, res := range r.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		wanted := func(name string) bool {
			if res.ConfigNames == nil {
				return true
			}
			for _, w := range res.ConfigNames {
				if w == name {
					return true
				}
			}
			return false
		}
		if code := h.configDenied(req, acl.OpDescribeConfigs, int8(res.ResourceType), res.ResourceName); code != 0 {
			rr.ErrorCode = code
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		switch res.ResourceType {
		case resourceTopic:
			t, ok := h.store.Topic(res.ResourceName)
			if !ok {
				rr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rr.ErrorMessage = errMessage(fmt.Errorf("unknown topic %q", res.ResourceName))
				break
			}
			tc := config.ResolveTopic(t.Configs, h.cfg.TopicDefaults)
			for _, name := range tc.Names() {
				if !wanted(name) {
					continue
				}
				v, src, _ := tc.Get(name)
				key, _ := config.LookupTopicKey(name)
				c := kmsg.NewDescribeConfigsResponseResourceConfig()
				val := v
				c.Name, c.Value, c.Source, c.IsDefault = name, &val, kmsg.ConfigSource(src), src == config.SourceDefault
				c.ConfigType = kmsg.ConfigType(key.Type)
				if r.IncludeDocumentation {
					doc := key.Doc
					c.Documentation = &doc
				}
				rr.Configs = append(rr.Configs, c)
			}
		case resourceBroker:
			if res.ResourceName != "" && res.ResourceName != strconv.Itoa(int(h.cfg.NodeID)) {
				rr.ErrorCode = kerr.InvalidRequest.Code
				rr.ErrorMessage = errMessage(fmt.Errorf("this is broker %d", h.cfg.NodeID))
				break
			}
			for name, v := range h.brokerSettings() {
				if !wanted(name) {
					continue
				}
				c := kmsg.NewDescribeConfigsResponseResourceConfig()
				val := v
				c.Name, c.Value, c.ReadOnly, c.Source = name, &val, true, kmsg.ConfigSource(config.SourceBroker)
				rr.Configs = append(rr.Configs, c)
			}
		case resourceClientMetrics:
			rr.ErrorCode, rr.ErrorMessage, rr.Configs = h.describeClientMetrics(ctx, res.ResourceName, wanted, r.IncludeDocumentation)
		case resourceGroup:
			rr.ErrorCode, rr.ErrorMessage, rr.Configs = h.describeGroupConfigs(ctx, res.ResourceName, wanted, r.IncludeDocumentation)
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
			rr.ErrorMessage = errMessage(fmt.Errorf("resource type %d is not supported", res.ResourceType))
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return kafka.Reply{Response: resp}, nil
}
