package replica

import (
	"maps"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
)

// topicConfigs keeps each topic's resolved config while its configs do not
// change, so that Reconcile resolves a topic once, not once per partition,
// and gives a replica a new config (partition.Replica.SetConfig: a log
// reconfiguration and a wake of every waiter) only when it changed. At
// 1,000 partitions every Reconcile, one per ISR or partition change,
// resolved and set every partition's config (issue 23).
// REQUIRES: the Manager's reconcileMu held.
type topicConfigs map[string]resolvedTopic

type resolvedTopic struct {
	id      controlplane.TopicID
	configs map[string]string
	tc      *config.TopicConfig
}

// resolve returns t's resolved config: the same pointer as the last call
// for t while its id and configs are the same.
func (c topicConfigs) resolve(r *Manager, t controlplane.Topic) *config.TopicConfig {
	if rt, ok := c[t.Name]; ok && rt.id == t.ID && maps.Equal(rt.configs, t.Configs) {
		return rt.tc
	}
	tc := r.TopicConfig(t)
	c[t.Name] = resolvedTopic{id: t.ID, configs: maps.Clone(t.Configs), tc: tc}
	return tc
}

// keep forgets the topics not in topics (deleted).
func (c topicConfigs) keep(topics map[string]controlplane.Topic) {
	for name := range c {
		if _, ok := topics[name]; !ok {
			delete(c, name)
		}
	}
}
