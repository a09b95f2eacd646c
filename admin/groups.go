package admin

import (
	"context"
	"errors"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/coordinator"
)

// EnsureTopic creates a coordinator's internal topic unless it exists
// (the topic-creating part of coordinator.Cluster, which the node's
// coordinators call on first use). A coordinator's topic that exists
// already is compared with the shape asked for (checkInternalShape): any
// difference is logged, and another partition count is an error.
func (h *Handlers) EnsureTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string) error {
	if _, err := h.store.CreateTopic(ctx, name, partitions, rf, configs); err != nil && !errors.Is(err, controlplane.ErrTopicExists) {
		return err
	}
	h.reconcile()
	if t, ok := h.store.Topic(name); ok && internalTopic(name) {
		return h.checkInternalShape(t, coordinator.TopicShape{Partitions: partitions, ReplicationFactor: rf, Configs: configs})
	}
	return nil
}
