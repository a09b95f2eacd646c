package broker

// CreateTopics (key 19), versions 0-7.
//
//   - v1: ValidateOnly, ErrorMessage.  v5: flexible versions; the response
//     carries the partition count, replication factor and effective configs.
//   - v4: -1 partitions / replication factor mean the broker defaults (KIP-464).
//   - v7: TopicID in the response.
//
// Configs are validated with Kafka's names before anything is written
// (INVALID_CONFIG); manual replica assignments are not supported yet
// (INVALID_REQUEST). A name given twice in one request fails both entries.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/kafka"
)

func (n *Node) handleCreateTopics(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.CreateTopicsRequest)
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, t := range r.Topics {
		seen[t.Topic]++
	}
	for _, t := range r.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Topic, -1, -1
		fail := func(code int16, err error) {
			rt.ErrorCode, rt.ErrorMessage = code, errMessage(err)
			resp.Topics = append(resp.Topics, rt)
		}
		if seen[t.Topic] > 1 {
			fail(kerr.InvalidRequest.Code, fmt.Errorf("topic %q named more than once", t.Topic))
			continue
		}
		if len(t.ReplicaAssignment) > 0 {
			fail(kerr.InvalidRequest.Code, fmt.Errorf("manual replica assignment is not supported"))
			continue
		}
		parts, rf := t.NumPartitions, t.ReplicationFactor
		if parts == -1 {
			parts = n.cfg.NumPartitions
		}
		if rf == -1 {
			rf = n.cfg.DefaultReplicationFactor
		}
		if parts < 1 {
			fail(kerr.InvalidPartitions.Code, fmt.Errorf("%d partitions", parts))
			continue
		}
		if rf < 1 {
			fail(kerr.InvalidReplicationFactor.Code, fmt.Errorf("replication factor %d", rf))
			continue
		}
		if err := controlplane.ValidateTopicName(t.Topic); err != nil {
			fail(adminErrorCode(err), err)
			continue
		}
		configs := map[string]string{}
		var cerr error
		for _, c := range t.Configs {
			if c.Value == nil {
				continue
			}
			if err := config.ValidateTopicValue(c.Name, *c.Value); err != nil {
				cerr = err
				break
			}
			configs[c.Name] = *c.Value
		}
		if cerr != nil {
			fail(kerr.InvalidConfig.Code, cerr)
			continue
		}
		if r.ValidateOnly {
			if _, exists := n.store.Topic(t.Topic); exists {
				fail(kerr.TopicAlreadyExists.Code, fmt.Errorf("topic %q exists", t.Topic))
				continue
			}
			if live := len(n.store.Brokers()); int(rf) > live {
				fail(kerr.InvalidReplicationFactor.Code, fmt.Errorf("replication factor %d > %d live brokers", rf, live))
				continue
			}
		} else {
			topic, err := n.store.CreateTopic(ctx, t.Topic, parts, rf, configs)
			if err != nil {
				fail(adminErrorCode(err), err)
				continue
			}
			rt.TopicID = topic.ID
		}
		rt.NumPartitions, rt.ReplicationFactor = parts, rf
		tc := config.ResolveTopic(configs, n.cfg.TopicDefaults)
		for _, name := range tc.Names() {
			v, src, _ := tc.Get(name)
			c := kmsg.NewCreateTopicsResponseTopicConfig()
			val := v
			c.Name, c.Value, c.Source = name, &val, int8(src)
			rt.Configs = append(rt.Configs, c)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if !r.ValidateOnly {
		n.reconcile()
	}
	return kafka.Reply{Response: resp}, nil
}
