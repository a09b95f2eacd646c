package group_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// consumerHeartbeat sends one ConsumerGroupHeartbeat for member (epoch 0
// joins, -1 leaves) subscribed to topic.
func consumerHeartbeat(t *testing.T, ctx context.Context, cl *kgo.Client, group, member string, epoch int32, topic string) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = group, member, epoch, 30000
	if epoch == 0 {
		req.SubscribedTopicNames, req.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	// A coordinator that is loading (right after a restart) or moving is
	// asked again, as a client would.
	var resp *kmsg.ConsumerGroupHeartbeatResponse
	var err error
	perr := proctest.Poll(30*time.Second, 50*time.Millisecond, func() bool {
		resp, err = req.RequestWith(ctx, cl)
		return err != nil || !kerr.IsRetriable(kerr.ErrorForCode(resp.ErrorCode))
	})
	if err != nil || perr != nil {
		t.Fatalf("ConsumerGroupHeartbeat %s epoch %d: %v %v", member, epoch, err, perr)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("ConsumerGroupHeartbeat %s epoch %d: %v", member, epoch, kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp
}

func groupConfigNames(t *testing.T, ctx context.Context, adm *kadm.Client) []string {
	t.Helper()
	l, err := adm.ListConfigResources(ctx, kadm.ConfigResourceGroupConfig)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range l.Resources {
		out = append(out, r.Name)
	}
	return out
}

// TestGroupConfigs: KIP-848 group configs (the GROUP config resource,
// type 32) on a real node. IncrementalAlterConfigs sets a consumer
// group's session timeout and heartbeat interval; bad names and values
// are refused with Kafka's INVALID_CONFIG (an unknown name, the broker's
// "group." name, a value out of the broker-wide bounds, a session not
// above the heartbeat, an APPEND, share.isolation.level in capitals)
// and validate-only writes nothing; DescribeConfigs shows the group's
// values (source GROUP_CONFIG) and the node's defaults;
// ListConfigResources lists the group; the next ConsumerGroupHeartbeat
// answers the group's interval, and the one after an alteration the new
// one; the configs survive a node restart; DeleteGroups deletes them with
// the group. Before, DescribeConfigs and AlterConfigs refused resource
// type 32 (INVALID_REQUEST) and heartbeats answered the node's interval.
func TestGroupConfigs(t *testing.T) {
	dir := t.TempDir()
	nodeCfg := func(c *config.Broker) {
		c.GroupConsumerHeartbeatInterval = 500 * time.Millisecond // the node's default, below the bounds a group keeps to
		c.GroupConsumerSessionTimeout = 3 * time.Second
	}
	n := testnode.Start(t, dir, nodeCfg)
	ctx := proctest.Context(t, 120*time.Second)
	cl := testnode.Client(t, n.KafkaAddr())
	adm := kadm.NewClient(cl)
	testnode.CreateTopic(t, adm, "cfg-topic", 2)
	const group = "cfg-848"

	if vals, srcs, code := testnode.DescribeGroupConfigs(t, ctx, cl, group); code != 0 ||
		vals["consumer.heartbeat.interval.ms"] != "500" || srcs["consumer.heartbeat.interval.ms"] != kmsg.ConfigSourceDefaultConfig ||
		vals["share.isolation.level"] != "read_uncommitted" || len(vals) != 8 {
		t.Fatalf("a group without configs: %v %v %v", vals, srcs, kerr.ErrorForCode(code))
	}
	if hb := consumerHeartbeat(t, ctx, cl, group, "member-a", 0, "cfg-topic"); hb.HeartbeatIntervalMillis != 500 {
		t.Fatalf("heartbeat interval before any group config: %d", hb.HeartbeatIntervalMillis)
	}

	for _, bad := range []struct {
		op   kmsg.IncrementalAlterConfigsRequestResourceConfig
		want string
	}{
		{testnode.SetConfigOp("color", "blue"), "Unknown group config name: color"},
		{testnode.SetConfigOp("group.consumer.heartbeat.interval.ms", "7000"), "Unknown group config name"},
		{testnode.SetConfigOp("consumer.heartbeat.interval.ms", "seven"), "Not a number of type INT"},
		{testnode.SetConfigOp("consumer.heartbeat.interval.ms", "4999"), "group.consumer.min.heartbeat.interval.ms"},
		{testnode.SetConfigOp("consumer.session.timeout.ms", "60001"), "group.consumer.max.session.timeout.ms"},
		{testnode.SetConfigOp("share.delivery.count.limit", "11"), "group.share.max.delivery.count.limit"},
		{testnode.SetConfigOp("share.record.lock.duration.ms", "999"), "at least 1000"},
		{testnode.SetConfigOp("share.isolation.level", "READ_COMMITTED"), "String must be one of: read_committed, read_uncommitted"},
		{testnode.SetConfigOp("share.auto.offset.reset", "by_duration:PT1H"), "not built"},
		// The node's session (3 s) is not above a group interval of 7 s.
		{testnode.SetConfigOp("consumer.heartbeat.interval.ms", "7000"), "must be greater than consumer.heartbeat.interval.ms"},
		{func() kmsg.IncrementalAlterConfigsRequestResourceConfig {
			c := testnode.SetConfigOp("share.auto.offset.reset", "earliest")
			c.Op = kmsg.IncrementalAlterConfigOpAppend
			return c
		}(), "not a list config"},
	} {
		code, msg := testnode.AlterGroupConfigs(t, ctx, cl, group, false, bad.op)
		if code != kerr.InvalidConfig.Code || !strings.Contains(msg, bad.want) {
			t.Errorf("%s=%v (op %d): %v %q, want INVALID_CONFIG with %q", bad.op.Name, ptrString(bad.op.Value), bad.op.Op, kerr.ErrorForCode(code), msg, bad.want)
		}
	}
	if code, msg := testnode.AlterGroupConfigs(t, ctx, cl, "", false, testnode.SetConfigOp("consumer.session.timeout.ms", "50000")); code != kerr.InvalidRequest.Code {
		t.Errorf("an empty group name: %v %q", kerr.ErrorForCode(code), msg)
	}
	good := []kmsg.IncrementalAlterConfigsRequestResourceConfig{
		testnode.SetConfigOp("consumer.session.timeout.ms", "50000"), testnode.SetConfigOp("consumer.heartbeat.interval.ms", "7000"),
	}
	if code, msg := testnode.AlterGroupConfigs(t, ctx, cl, group, true, good...); code != 0 {
		t.Fatalf("validate only: %v %q", kerr.ErrorForCode(code), msg)
	}
	if vals, _, _ := testnode.DescribeGroupConfigs(t, ctx, cl, group); vals["consumer.heartbeat.interval.ms"] != "500" {
		t.Fatalf("validate only wrote %v", vals)
	}
	if names := groupConfigNames(t, ctx, adm); len(names) != 0 {
		t.Fatalf("groups with configs before any: %v", names)
	}
	if code, msg := testnode.AlterGroupConfigs(t, ctx, cl, group, false, good...); code != 0 {
		t.Fatalf("alter: %v %q", kerr.ErrorForCode(code), msg)
	}
	vals, srcs, _ := testnode.DescribeGroupConfigs(t, ctx, cl, group)
	if vals["consumer.heartbeat.interval.ms"] != "7000" || srcs["consumer.heartbeat.interval.ms"] != kmsg.ConfigSourceGroupConfig ||
		vals["consumer.session.timeout.ms"] != "50000" || srcs["share.session.timeout.ms"] != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("after alter: %v %v", vals, srcs)
	}
	if names := groupConfigNames(t, ctx, adm); len(names) != 1 || names[0] != group {
		t.Fatalf("ListConfigResources GROUP: %v", names)
	}
	// The next heartbeat of the member already in the group answers the
	// group's interval.
	if hb := consumerHeartbeat(t, ctx, cl, group, "member-a", 0, "cfg-topic"); hb.HeartbeatIntervalMillis != 7000 {
		t.Fatalf("heartbeat interval after the group config: %d, want 7000", hb.HeartbeatIntervalMillis)
	}
	if code, msg := testnode.AlterGroupConfigs(t, ctx, cl, group, false, testnode.SetConfigOp("consumer.heartbeat.interval.ms", "9000")); code != 0 {
		t.Fatalf("alter again: %v %q", kerr.ErrorForCode(code), msg)
	}
	hb := consumerHeartbeat(t, ctx, cl, group, "member-a", 0, "cfg-topic")
	if hb.HeartbeatIntervalMillis != 9000 {
		t.Fatalf("heartbeat interval after the second alteration: %d, want 9000", hb.HeartbeatIntervalMillis)
	}
	consumerHeartbeat(t, ctx, cl, group, "member-a", -1, "cfg-topic") // leaves
	// AlterConfigs (the legacy API) replaces the whole set.
	legacy := kmsg.NewPtrAlterConfigsRequest()
	lr := kmsg.NewAlterConfigsRequestResource()
	lr.ResourceType, lr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for _, kv := range [][2]string{{"consumer.session.timeout.ms", "55000"}, {"consumer.heartbeat.interval.ms", "8000"}} {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[0], kmsg.StringPtr(kv[1])
		lr.Configs = append(lr.Configs, c)
	}
	legacy.Resources = append(legacy.Resources, lr)
	if resp, err := legacy.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("AlterConfigs: %v %+v", err, resp)
	}

	// A restart: the configs are in the control plane.
	cl.Close()
	cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Close(cctx); err != nil {
		t.Fatal(err)
	}
	n = testnode.Start(t, dir, nodeCfg)
	cl = testnode.Client(t, n.KafkaAddr())
	adm = kadm.NewClient(cl)
	vals, _, _ = testnode.DescribeGroupConfigs(t, ctx, cl, group)
	if vals["consumer.heartbeat.interval.ms"] != "8000" || vals["consumer.session.timeout.ms"] != "55000" {
		t.Fatalf("after a restart: %v", vals)
	}
	hb = consumerHeartbeat(t, ctx, cl, group, "member-b", 0, "cfg-topic")
	if hb.HeartbeatIntervalMillis != 8000 {
		t.Fatalf("heartbeat interval after a restart: %d, want 8000", hb.HeartbeatIntervalMillis)
	}
	consumerHeartbeat(t, ctx, cl, group, "member-b", -1, "cfg-topic")

	// DeleteGroups deletes the group's configs with it.
	dr, err := adm.DeleteGroup(ctx, group)
	if err != nil || dr.Err != nil {
		t.Fatalf("DeleteGroup: %v %v", err, dr.Err)
	}
	vals, srcs, _ = testnode.DescribeGroupConfigs(t, ctx, cl, group)
	if vals["consumer.heartbeat.interval.ms"] != "500" || srcs["consumer.heartbeat.interval.ms"] != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("configs of a deleted group: %v %v", vals, srcs)
	}
	if names := groupConfigNames(t, ctx, adm); len(names) != 0 {
		t.Fatalf("a deleted group still listed with configs: %v", names)
	}
}

func ptrString(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// TestGroupConfigsAcrossNodes: a group config altered through the node
// that is not the group's coordinator reaches the coordinator through the
// control plane's watch: its heartbeats then answer the group's interval.
func TestGroupConfigsAcrossNodes(t *testing.T) {
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 2, testnode.WithSession(2*time.Second))
	seeds := []string{nodes[0].KafkaAddr(), nodes[1].KafkaAddr()}
	cl := testnode.Client(t, seeds[0], kgo.SeedBrokers(seeds...))
	adm := kadm.NewClient(cl)
	ctx := proctest.Context(t, 90*time.Second)
	proctest.Eventually(t, 20*time.Second, "2 brokers", func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 2
	})
	testnode.CreateTopic(t, adm, "cfg-across", 1)
	const group = "cfg-across-g"
	if hb := consumerHeartbeat(t, ctx, cl, group, "member-x", 0, "cfg-across"); hb.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("interval before any group config: %d", hb.HeartbeatIntervalMillis)
	}
	var coord int32 = -1
	proctest.Eventually(t, 20*time.Second, "the group's coordinator", func() bool {
		r := adm.FindGroupCoordinators(ctx, group)
		c, ok := r[group]
		coord = c.NodeID
		return ok && c.Err == nil
	})
	other := int32(1)
	if coord == 1 {
		other = 2
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = append(res.Configs, testnode.SetConfigOp("consumer.heartbeat.interval.ms", "7000"))
	req.Resources = append(req.Resources, res)
	raw, err := cl.Broker(int(other)).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if r := raw.(*kmsg.IncrementalAlterConfigsResponse); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter on node %d: %v", other, kerr.ErrorForCode(r.Resources[0].ErrorCode))
	}
	proctest.Eventually(t, 20*time.Second, "the coordinator answering the group's interval", func() bool {
		return consumerHeartbeat(t, ctx, cl, group, "member-x", 0, "cfg-across").HeartbeatIntervalMillis == 7000
	})
}
