package broker

import (
	"context"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/infra/config"
)

// groupConfigRules are the node's group config defaults (its group_*
// settings) and the broker-wide bounds a group's own values keep to.
func groupConfigRules(c config.Broker) coordinator.GroupConfigRules {
	ms := func(d interface{ Milliseconds() int64 }) int32 { return int32(d.Milliseconds()) }
	return coordinator.GroupConfigRules{
		Defaults: coordinator.GroupConfig{
			ConsumerSessionTimeoutMs:    ms(c.GroupConsumerSessionTimeout),
			ConsumerHeartbeatIntervalMs: ms(c.GroupConsumerHeartbeatInterval),
			ShareSessionTimeoutMs:       ms(c.GroupShareSessionTimeout),
			ShareHeartbeatIntervalMs:    ms(c.GroupShareHeartbeatInterval),
			ShareRecordLockDurationMs:   ms(c.GroupShareRecordLockDuration),
			ShareDeliveryCountLimit:     int32(c.GroupShareDeliveryCountLimit),
			ShareAutoOffsetReset:        c.ShareAutoOffsetReset,
			ShareIsolationLevel:         "read_uncommitted",
		},
		Bounds: map[string]coordinator.Bounds{
			coordinator.GroupConsumerSessionTimeoutMs:    {Min: ms(c.GroupConsumerMinSessionTimeout), Max: ms(c.GroupConsumerMaxSessionTimeout)},
			coordinator.GroupConsumerHeartbeatIntervalMs: {Min: ms(c.GroupConsumerMinHeartbeatInterval), Max: ms(c.GroupConsumerMaxHeartbeatInterval)},
			coordinator.GroupShareSessionTimeoutMs:       {Min: ms(c.GroupShareMinSessionTimeout), Max: ms(c.GroupShareMaxSessionTimeout)},
			coordinator.GroupShareHeartbeatIntervalMs:    {Min: ms(c.GroupShareMinHeartbeatInterval), Max: ms(c.GroupShareMaxHeartbeatInterval)},
			coordinator.GroupShareRecordLockDurationMs:   {Min: ms(c.GroupShareMinRecordLockDuration), Max: ms(c.GroupShareMaxRecordLockDuration)},
			coordinator.GroupShareDeliveryCountLimit:     {Min: int32(c.GroupShareMinDeliveryCountLimit), Max: int32(c.GroupShareMaxDeliveryCountLimit)},
		},
	}
}

// startGroupConfigs opens the group configs (KIP-848, KIP-932) in the
// control plane and loads them before the coordinators serve: admin
// stores them, the group and share coordinators read them (groupConfig).
func (n *Node) startGroupConfigs(ctx context.Context) error {
	var err error
	if n.groupConfigs, err = controlplane.OpenGroupConfigs(ctx, n.nc, n.cfg.NATSReplicas, n.natsMon); err != nil {
		return err
	}
	n.groupRules = groupConfigRules(n.cfg)
	if err := n.groupConfigs.Watch(ctx); err != nil {
		return err
	}
	// A value stored under wider bounds (another node's, or this node's
	// before a restart) is capped when it is applied: say so once here,
	// not at every heartbeat.
	names, err := n.groupConfigs.Names(ctx)
	if err != nil {
		n.logger.Warn("group configs: listing the groups to check their bounds", "err", err)
		return nil
	}
	for _, g := range names {
		n.groupRules.Resolve(g, n.groupConfigs.Configs(g), n.logger)
	}
	return nil
}

// groupConfig is a group's effective settings as this node last saw its
// configs; no I/O, no log (it runs at every heartbeat and share fetch).
func (n *Node) groupConfig(group string) coordinator.GroupConfig {
	if n.groupConfigs == nil { // not started: the node's settings
		return groupConfigRules(n.cfg).Defaults
	}
	return n.groupRules.Resolve(group, n.groupConfigs.Configs(group), nil)
}

// deleteGroupConfigs deletes a deleted group's configs.
func (n *Node) deleteGroupConfigs(ctx context.Context, group string) error {
	if n.groupConfigs == nil {
		return nil
	}
	return n.groupConfigs.Delete(ctx, group)
}

func (n *Node) closeGroupConfigs() {
	if n.groupConfigs != nil {
		n.groupConfigs.Close()
	}
}
