package sdk

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicInfo describes a topic.
type TopicInfo struct {
	Name       string
	ID         string
	Internal   bool
	Partitions []PartitionInfo // by partition number
}

// PartitionInfo is one partition's placement.
type PartitionInfo struct {
	Partition   int32
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	Err         error // the partition's error in the Metadata answer (LEADER_NOT_AVAILABLE, ...), else nil
}

// ReplicationFactor is the number of replicas of the topic's first
// partition (Kafka's tools assume every partition has as many).
func (t TopicInfo) ReplicationFactor() int {
	if len(t.Partitions) == 0 {
		return 0
	}
	return len(t.Partitions[0].Replicas)
}

// ClusterInfo is the cluster as a node's Metadata answer describes it.
type ClusterInfo struct {
	ClusterID  string
	Controller int32        // node id of the controller, -1 when none is known
	Brokers    []BrokerInfo // by node id
	Topics     []TopicInfo  // by name, internal topics included
}

// BrokerInfo is one live broker: its id and the address it advertises.
type BrokerInfo struct {
	NodeID int32
	Host   string
	Port   int32
	Rack   string // "" when the broker has none
}

// DescribeCluster returns the live brokers, the controller, and the named
// topics (every topic when none is named, internal ones included) with
// their partitions. A named topic that does not exist is left out.
func (a *Admin) DescribeCluster(ctx context.Context, topics ...string) (ClusterInfo, error) {
	if a.closed.Load() {
		return ClusterInfo{}, ErrClosed
	}
	m, err := a.adm.Metadata(ctx, topics...)
	if err != nil {
		return ClusterInfo{}, fmt.Errorf("sdk: metadata: %w", err)
	}
	info := ClusterInfo{ClusterID: m.Cluster, Controller: m.Controller}
	for _, b := range m.Brokers {
		bi := BrokerInfo{NodeID: b.NodeID, Host: b.Host, Port: b.Port}
		if b.Rack != nil {
			bi.Rack = *b.Rack
		}
		info.Brokers = append(info.Brokers, bi)
	}
	slices.SortFunc(info.Brokers, func(x, y BrokerInfo) int { return cmp.Compare(x.NodeID, y.NodeID) })
	for _, d := range m.Topics.Sorted() {
		if d.Err == nil {
			info.Topics = append(info.Topics, topicInfo(d))
		}
	}
	return info, nil
}

// topicInfo converts kadm's description of a topic.
func topicInfo(d kadm.TopicDetail) TopicInfo {
	info := TopicInfo{Name: d.Topic, ID: d.ID.String(), Internal: d.IsInternal}
	for _, p := range d.Partitions.Sorted() {
		info.Partitions = append(info.Partitions, PartitionInfo{Partition: p.Partition, Leader: p.Leader,
			LeaderEpoch: p.LeaderEpoch, Replicas: slices.Clone(p.Replicas), ISR: slices.Clone(p.ISR), Err: p.Err})
	}
	return info
}

// CreateTopic creates topic with partitions partitions, rf replicas each,
// and the given topic configs (Kafka names: retention.ms, ...). -1 for
// partitions or rf takes the broker's default. A topic that exists is
// ErrTopicExists.
func (a *Admin) CreateTopic(ctx context.Context, topic string, partitions int32, rf int16, configs map[string]string) error {
	if a.closed.Load() {
		return ErrClosed
	}
	cfg := map[string]*string{}
	for k, v := range configs {
		cfg[k] = &v
	}
	resp, err := a.adm.CreateTopic(ctx, partitions, rf, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("%w: %s: %w", ErrTopicExists, topic, err)
	}
	return topicErr(topic, err)
}

// ListTopics returns the names of the topics, internal ones
// (__consumer_offsets) excluded, sorted.
func (a *Admin) ListTopics(ctx context.Context) ([]string, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	td, err := a.adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("sdk: list topics: %w", err)
	}
	return td.Names(), nil
}

// DescribeTopic returns topic's partitions and their replicas.
func (a *Admin) DescribeTopic(ctx context.Context, topic string) (TopicInfo, error) {
	if a.closed.Load() {
		return TopicInfo{}, ErrClosed
	}
	td, err := a.adm.ListTopics(ctx, topic)
	if err != nil {
		return TopicInfo{}, topicErr(topic, err)
	}
	d, ok := td[topic]
	if !ok {
		return TopicInfo{}, topicErr(topic, kerr.UnknownTopicOrPartition)
	}
	if d.Err != nil {
		return TopicInfo{}, topicErr(topic, d.Err)
	}
	return topicInfo(d), nil
}

// DeleteTopic deletes topic and, in time, its remote segments.
func (a *Admin) DeleteTopic(ctx context.Context, topic string) error {
	if a.closed.Load() {
		return ErrClosed
	}
	resp, err := a.adm.DeleteTopic(ctx, topic)
	if err == nil {
		err = resp.Err
	}
	return topicErr(topic, err)
}

// TopicConfig returns topic's effective configs (defaults included), by
// Kafka name.
func (a *Admin) TopicConfig(ctx context.Context, topic string) (map[string]string, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	rcs, err := a.adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return nil, topicErr(topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return nil, topicErr(topic, err)
	}
	out := map[string]string{}
	for _, c := range rc.Configs {
		out[c.Key] = c.MaybeValue()
	}
	return out, nil
}

// AlterTopicConfig sets the configs in set and returns those in unset to
// their defaults, leaving the others as they are (IncrementalAlterConfigs).
func (a *Admin) AlterTopicConfig(ctx context.Context, topic string, set map[string]string, unset ...string) error {
	if a.closed.Load() {
		return ErrClosed
	}
	var alts []kadm.AlterConfig
	for k, v := range set {
		alts = append(alts, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	for _, k := range unset {
		alts = append(alts, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	resps, err := a.adm.AlterTopicConfigs(ctx, alts, topic)
	if err == nil {
		var r kadm.AlterConfigsResponse
		if r, err = resps.On(topic, nil); err == nil {
			err = r.Err
			if err != nil && r.ErrMessage != "" {
				err = fmt.Errorf("%w: %s", err, r.ErrMessage)
			}
		}
	}
	return topicErr(topic, err)
}
