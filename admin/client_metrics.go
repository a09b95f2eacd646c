package admin

// Client metrics subscriptions (KIP-714) are the config resources of type
// CLIENT_METRICS (16), named by the subscription: IncrementalAlterConfigs
// and AlterConfigs set their metrics, interval.ms and match, validated with
// Kafka's rules (package clientmetrics: an unknown config or an interval
// out of 100..3600000 is INVALID_REQUEST, a malformed match entry
// INVALID_CONFIG), DescribeConfigs shows them, and ListConfigResources
// lists them. They are stored in the control plane (controlplane.
// ClientMetrics), which every node watches to answer
// GetTelemetrySubscriptions (package telemetry). Deleting every config of
// a subscription deletes it. Both need AlterConfigs or DescribeConfigs on
// the cluster, as in Kafka.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/clientmetrics"
	"github.com/shale-io/shale/infra/config"
)

// errNoClientMetrics: the node was built without the client metrics store.
var errNoClientMetrics = errors.New("client metrics subscriptions are not available on this node")

// alterClientMetrics validates and stores a subscription's new configs.
func (h *Handlers) alterClientMetrics(ctx context.Context, name string, validateOnly bool, apply func(old map[string]string) (map[string]string, error)) (int16, *string) {
	if h.clientMetrics == nil {
		return kerr.InvalidRequest.Code, errMessage(errNoClientMetrics)
	}
	err := h.clientMetrics.Alter(ctx, name, checkedChange(apply, validateOnly, func(next map[string]string) error {
		for k, v := range next {
			if v == "" && k != clientmetrics.ConfigInterval {
				delete(next, k) // an empty list is the default
			}
		}
		_, err := clientmetrics.Parse(name, next)
		return err
	}))
	switch {
	case err == nil, errors.Is(err, errValidated):
		return 0, nil
	case errors.Is(err, clientmetrics.ErrInvalidRequest):
		return kerr.InvalidRequest.Code, errMessage(err)
	case errors.Is(err, clientmetrics.ErrInvalidConfig), errors.Is(err, config.ErrInvalidConfig):
		return kerr.InvalidConfig.Code, errMessage(err)
	}
	return adminErrorCode(err), errMessage(err)
}

// errValidated stops a ValidateOnly alteration after its checks passed.
var errValidated = errors.New("validated only")

// checkedChange is the change an alteration stores by compare-and-set:
// apply to the current configs, then check (which may drop what it
// normalizes away) the result. With validateOnly it keeps the current
// configs and stops with errValidated once the checks pass.
func checkedChange(apply func(old map[string]string) (map[string]string, error), validateOnly bool, check func(next map[string]string) error) func(map[string]string) (map[string]string, error) {
	return func(cur map[string]string) (map[string]string, error) {
		next, err := apply(cur)
		if err != nil {
			return nil, err
		}
		if err := check(next); err != nil {
			return nil, err
		}
		if validateOnly {
			return maps.Clone(cur), errValidated
		}
		return next, nil
	}
}

// describeClientMetrics lists a subscription's configs; a name with no
// subscription lists the defaults, as Kafka describes any name.
func (h *Handlers) describeClientMetrics(ctx context.Context, name string, wanted func(string) bool, docs bool) (int16, *string, []kmsg.DescribeConfigsResponseResourceConfig) {
	if h.clientMetrics == nil {
		return kerr.InvalidRequest.Code, errMessage(errNoClientMetrics), nil
	}
	if name == "" {
		return kerr.InvalidRequest.Code, errMessage(fmt.Errorf("subscription name can't be empty")), nil
	}
	cur, err := h.clientMetrics.Get(ctx, name)
	if err != nil {
		return adminErrorCode(err), errMessage(err), nil
	}
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, k := range clientmetrics.Names {
		if !wanted(k) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		v, set := cur[k]
		if !set {
			v = clientmetrics.Defaults[k]
		}
		c.Name, c.Value, c.IsDefault = k, &v, !set
		c.Source = kmsg.ConfigSourceDefaultConfig
		if set {
			c.Source = kmsg.ConfigSourceClientMetricsConfig
		}
		c.ConfigType = kmsg.ConfigTypeList
		if k == clientmetrics.ConfigInterval {
			c.ConfigType = kmsg.ConfigTypeInt
		}
		if docs {
			d := clientMetricsDocs[k]
			c.Documentation = &d
		}
		out = append(out, c)
	}
	return 0, nil, out
}

var clientMetricsDocs = map[string]string{
	clientmetrics.ConfigMetrics:  "Subscription metrics list: metric name prefixes, * for all",
	clientmetrics.ConfigInterval: "Push interval in milliseconds",
	clientmetrics.ConfigMatch:    "Client match pattern list: key=regex, keys client_instance_id, client_id, client_software_name, client_software_version, client_source_address, client_source_port",
}

// clientMetricsNames lists the subscriptions, sorted.
func (h *Handlers) clientMetricsNames(ctx context.Context) ([]string, error) {
	if h.clientMetrics == nil {
		return nil, nil
	}
	names, err := h.clientMetrics.Names(ctx)
	slices.Sort(names)
	return names, err
}
