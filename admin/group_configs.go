package admin

// Group configs (KIP-848, KIP-932) are the config resources of type GROUP
// (32), named by the group id: IncrementalAlterConfigs and AlterConfigs
// set a group's consumer.session.timeout.ms,
// consumer.heartbeat.interval.ms, share.session.timeout.ms,
// share.heartbeat.interval.ms, share.record.lock.duration.ms,
// share.delivery.count.limit, share.auto.offset.reset and
// share.isolation.level, checked with Kafka's rules against the
// broker-wide bounds (coordinator.GroupConfigRules: an unknown name, a
// value of the wrong type, out of bounds or not built is INVALID_CONFIG);
// DescribeConfigs shows them with the node's defaults for the others;
// ListConfigResources lists the groups that have any. The group need not
// exist, as in Kafka. They are stored in the control plane
// (controlplane.GroupConfigs), which every node watches, and the
// coordinators apply them at the group's next heartbeat or acquisition.
// Deleting every config of a group deletes its key; DeleteGroups deletes
// them with the group. Both need AlterConfigs or DescribeConfigs on the
// group (GROUP_AUTHORIZATION_FAILED), as in Kafka.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/infra/config"
)

// errNoGroupConfigs: the node was built without the group configs store.
var errNoGroupConfigs = errors.New("group configs are not available on this node")

// emptyGroupName is Kafka's message for a GROUP resource without a name
// (INVALID_REQUEST).
const emptyGroupName = "Group name must not be empty"

// alterGroupConfigs checks and stores a group's new configs: the whole
// set after apply, as Kafka validates it.
func (h *Handlers) alterGroupConfigs(ctx context.Context, group string, validateOnly bool, apply func(old map[string]string) (map[string]string, error)) (int16, *string) {
	if h.groupConfigs == nil {
		return kerr.InvalidRequest.Code, errMessage(errNoGroupConfigs)
	}
	if group == "" {
		return kerr.InvalidRequest.Code, kmsg.StringPtr(emptyGroupName)
	}
	err := h.groupConfigs.Alter(ctx, group, checkedChange(apply, validateOnly, h.groupRules.Validate))
	switch {
	case err == nil, errors.Is(err, errValidated):
		return 0, nil
	case errors.Is(err, coordinator.ErrInvalidGroupConfig), errors.Is(err, config.ErrInvalidConfig):
		h.logger.Info("group config refused", "group", group, "err", err)
		return kerr.InvalidConfig.Code, errMessage(err)
	}
	h.logger.Warn("group config not stored", "group", group, "err", err)
	return adminErrorCode(err), errMessage(err)
}

// describeGroupConfigs lists every group config Shale builds: the group's
// own value, or the node's default; any group id may be described.
func (h *Handlers) describeGroupConfigs(ctx context.Context, group string, wanted func(string) bool, docs bool) (int16, *string, []kmsg.DescribeConfigsResponseResourceConfig) {
	if h.groupConfigs == nil {
		return kerr.InvalidRequest.Code, errMessage(errNoGroupConfigs), nil
	}
	if group == "" {
		return kerr.InvalidRequest.Code, kmsg.StringPtr(emptyGroupName), nil
	}
	cur, err := h.groupConfigs.Get(ctx, group)
	if err != nil {
		return adminErrorCode(err), errMessage(err), nil
	}
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, k := range coordinator.GroupConfigKeys {
		if !wanted(k.Name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		v, set := cur[k.Name]
		if !set {
			v = h.groupRules.Defaults.Value(k.Name)
		}
		c.Name, c.Value, c.IsDefault = k.Name, &v, !set
		c.Source = kmsg.ConfigSourceDefaultConfig
		if set {
			c.Source = kmsg.ConfigSourceGroupConfig
		}
		c.ConfigType = kmsg.ConfigTypeString
		if k.Int {
			c.ConfigType = kmsg.ConfigTypeInt
		}
		if docs {
			d := k.Doc
			c.Documentation = &d
		}
		out = append(out, c)
	}
	return 0, nil, out
}

// groupConfigNames lists the groups that have configs, sorted.
func (h *Handlers) groupConfigNames(ctx context.Context) ([]string, error) {
	if h.groupConfigs == nil {
		return nil, nil
	}
	names, err := h.groupConfigs.Names(ctx)
	if err != nil {
		return nil, fmt.Errorf("group configs: %w", err)
	}
	slices.Sort(names)
	return names, nil
}
