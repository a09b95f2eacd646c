package testnode

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterGroupConfigs sends one IncrementalAlterConfigs of a GROUP resource
// (type 32; kadm has no group config calls) and returns its error code.
func AlterGroupConfigs(t testing.TB, ctx context.Context, cl *kgo.Client, group string, validateOnly bool, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.Configs = kmsg.ConfigResourceTypeGroupConfig, group, ops
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Resources) != 1 {
		t.Fatalf("IncrementalAlterConfigs answered %d resources", len(resp.Resources))
	}
	msg := ""
	if m := resp.Resources[0].ErrorMessage; m != nil {
		msg = *m
	}
	return resp.Resources[0].ErrorCode, msg
}

// DescribeGroupConfigs asks DescribeConfigs for a GROUP resource: value
// and source by name.
func DescribeGroupConfigs(t testing.TB, ctx context.Context, cl *kgo.Client, group string) (map[string]string, map[string]kmsg.ConfigSource, int16) {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Resources) != 1 {
		t.Fatalf("DescribeConfigs answered %d resources", len(resp.Resources))
	}
	vals, srcs := map[string]string{}, map[string]kmsg.ConfigSource{}
	for _, c := range resp.Resources[0].Configs {
		if c.Value != nil {
			vals[c.Name] = *c.Value
		}
		srcs[c.Name] = c.Source
	}
	return vals, srcs, resp.Resources[0].ErrorCode
}

// SetConfigOp is an IncrementalAlterConfigs SET of name to value.
func SetConfigOp(name, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = name, kmsg.StringPtr(value)
	return c
}
