package group

// Group configs (KIP-848): a consumer group's own
// consumer.session.timeout.ms and consumer.heartbeat.interval.ms, which
// the node resolves (Config.GroupConfig) and this coordinator applies at
// the group's next ConsumerGroupHeartbeat: the interval it answers and
// the session it starts. A deleted group's configs are deleted with it.

import (
	"context"
	"time"
)

// consumerTimeouts are the session timeout and heartbeat interval of the
// KIP-848 members of group.
func (c *Config) consumerTimeouts(group string) (session, interval time.Duration) {
	if c.GroupConfig == nil {
		return c.ConsumerSessionTimeout, c.ConsumerHeartbeatInterval
	}
	gc := c.GroupConfig(group)
	session, interval = time.Duration(gc.ConsumerSessionTimeoutMs)*time.Millisecond, time.Duration(gc.ConsumerHeartbeatIntervalMs)*time.Millisecond
	if session <= 0 {
		session = c.ConsumerSessionTimeout
	}
	if interval <= 0 {
		interval = c.ConsumerHeartbeatInterval
	}
	return session, interval
}

// deleteGroupConfigs deletes a deleted group's configs. The group is gone
// either way: a failure is logged, and its configs stay for a group of
// the same id until they are altered.
func (c *Coordinator) deleteGroupConfigs(ctx context.Context, group string) {
	if c.cfg.DeleteGroupConfigs == nil {
		return
	}
	if err := c.cfg.DeleteGroupConfigs(ctx, group); err != nil {
		c.log.Warn("DeleteGroups: the deleted group's configs were not deleted", "group", group, "err", err)
	}
}
