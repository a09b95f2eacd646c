package broker_test

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

// alterGroupConfigs sends one IncrementalAlterConfigs of a GROUP resource
// (type 32; kadm has no group config calls) and returns its error code.
func alterGroupConfigs(t *testing.T, ctx context.Context, cl *kgo.Client, group string, validateOnly bool, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, string) {
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

// describeGroupConfigs asks DescribeConfigs for a GROUP resource: value
// and source by name.
func describeGroupConfigs(t *testing.T, ctx context.Context, cl *kgo.Client, group string) (map[string]string, map[string]kmsg.ConfigSource, int16) {
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

	if vals, srcs, code := describeGroupConfigs(t, ctx, cl, group); code != 0 ||
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
		{setOp("color", "blue"), "Unknown group config name: color"},
		{setOp("group.consumer.heartbeat.interval.ms", "7000"), "Unknown group config name"},
		{setOp("consumer.heartbeat.interval.ms", "seven"), "Not a number of type INT"},
		{setOp("consumer.heartbeat.interval.ms", "4999"), "group.consumer.min.heartbeat.interval.ms"},
		{setOp("consumer.session.timeout.ms", "60001"), "group.consumer.max.session.timeout.ms"},
		{setOp("share.delivery.count.limit", "11"), "group.share.max.delivery.count.limit"},
		{setOp("share.record.lock.duration.ms", "999"), "at least 1000"},
		{setOp("share.isolation.level", "READ_COMMITTED"), "String must be one of: read_committed, read_uncommitted"},
		{setOp("share.auto.offset.reset", "by_duration:PT1H"), "not built"},
		// The node's session (3 s) is not above a group interval of 7 s.
		{setOp("consumer.heartbeat.interval.ms", "7000"), "must be greater than consumer.heartbeat.interval.ms"},
		{func() kmsg.IncrementalAlterConfigsRequestResourceConfig {
			c := setOp("share.auto.offset.reset", "earliest")
			c.Op = kmsg.IncrementalAlterConfigOpAppend
			return c
		}(), "not a list config"},
	} {
		code, msg := alterGroupConfigs(t, ctx, cl, group, false, bad.op)
		if code != kerr.InvalidConfig.Code || !strings.Contains(msg, bad.want) {
			t.Errorf("%s=%v (op %d): %v %q, want INVALID_CONFIG with %q", bad.op.Name, ptrString(bad.op.Value), bad.op.Op, kerr.ErrorForCode(code), msg, bad.want)
		}
	}
	if code, msg := alterGroupConfigs(t, ctx, cl, "", false, setOp("consumer.session.timeout.ms", "50000")); code != kerr.InvalidRequest.Code {
		t.Errorf("an empty group name: %v %q", kerr.ErrorForCode(code), msg)
	}
	good := []kmsg.IncrementalAlterConfigsRequestResourceConfig{
		setOp("consumer.session.timeout.ms", "50000"), setOp("consumer.heartbeat.interval.ms", "7000"),
	}
	if code, msg := alterGroupConfigs(t, ctx, cl, group, true, good...); code != 0 {
		t.Fatalf("validate only: %v %q", kerr.ErrorForCode(code), msg)
	}
	if vals, _, _ := describeGroupConfigs(t, ctx, cl, group); vals["consumer.heartbeat.interval.ms"] != "500" {
		t.Fatalf("validate only wrote %v", vals)
	}
	if names := groupConfigNames(t, ctx, adm); len(names) != 0 {
		t.Fatalf("groups with configs before any: %v", names)
	}
	if code, msg := alterGroupConfigs(t, ctx, cl, group, false, good...); code != 0 {
		t.Fatalf("alter: %v %q", kerr.ErrorForCode(code), msg)
	}
	vals, srcs, _ := describeGroupConfigs(t, ctx, cl, group)
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
	if code, msg := alterGroupConfigs(t, ctx, cl, group, false, setOp("consumer.heartbeat.interval.ms", "9000")); code != 0 {
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
	vals, _, _ = describeGroupConfigs(t, ctx, cl, group)
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
	vals, srcs, _ = describeGroupConfigs(t, ctx, cl, group)
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

// shareFetcher is one share group member speaking ShareFetch and
// ShareAcknowledge over raw kmsg on one connection (which stays open, so
// the broker never releases its records for a disconnect).
type shareFetcher struct {
	t       *testing.T
	cl      *kgo.Client
	group   string
	member  string
	topicID [16]byte
	epoch   int32
}

// fetch sends one ShareFetch of partition 0 and returns the answer's lock
// timeout and the ranges acquired.
func (f *shareFetcher) fetch(ctx context.Context) (int32, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord) {
	f.t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(f.group), kmsg.StringPtr(f.member), f.epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 200, 1, 1<<20, 100, 100
	if f.epoch == 0 {
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = f.topicID
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = 0, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, f.cl)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		f.t.Fatalf("ShareFetch at session epoch %d: %v", f.epoch, kerr.ErrorForCode(resp.ErrorCode))
	}
	f.epoch++
	var out []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				f.t.Fatalf("ShareFetch partition %d: %v", rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
			out = append(out, rp.AcquiredRecords...)
		}
	}
	return resp.AcquisitionLockTimeoutMillis, out
}

// acknowledge sends one ShareAcknowledge of type typ for offsets
// first..last of partition 0.
func (f *shareFetcher) acknowledge(ctx context.Context, first, last int64, typ int8) {
	f.t.Helper()
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(f.group), kmsg.StringPtr(f.member), f.epoch
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = f.topicID
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, []int8{typ}
	rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, f.cl)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		f.t.Fatalf("ShareAcknowledge: %+v", resp)
	}
	f.epoch++
}

// TestShareGroupConfigs: KIP-932 group configs on a real node, over raw
// kmsg. A share group's share.auto.offset.reset=earliest starts it at the
// log start (the node's default is latest), its share.heartbeat.interval.ms
// is what ShareGroupHeartbeat answers, its share.record.lock.duration.ms
// (2 s; the node's is 60 s) is the lock ShareFetch answers and the one
// its records are held for (a record not acknowledged is acquired again
// with delivery count 2 well within the node's lock), a new lock duration
// is answered by the next ShareFetch, and share.delivery.count.limit=2
// (the node's is 5) archives a record released at its second delivery.
// DeleteGroups deletes the group's configs. Before, every setting was the
// node's.
func TestShareGroupConfigs(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) {
		c.GroupShareRecordLockDuration = 60 * time.Second
		c.GroupShareMinRecordLockDuration = time.Second
		c.ShareAutoOffsetReset = "latest"
	})
	ctx := proctest.Context(t, 120*time.Second)
	cl := testnode.Client(t, n.KafkaAddr())
	adm := kadm.NewClient(cl)
	testnode.CreateTopic(t, adm, "share-cfg", 1)
	testnode.ProduceN(t, n.KafkaAddr(), "share-cfg", 5, "r")
	td, err := adm.ListTopics(ctx, "share-cfg")
	if err != nil || td["share-cfg"].Err != nil {
		t.Fatalf("ListTopics: %v %v", err, td["share-cfg"].Err)
	}
	const group = "share-cfg-g"
	if code, msg := alterGroupConfigs(t, ctx, cl, group, false,
		setOp("share.auto.offset.reset", "earliest"), setOp("share.record.lock.duration.ms", "2000"),
		setOp("share.delivery.count.limit", "2"), setOp("share.heartbeat.interval.ms", "6000")); code != 0 {
		t.Fatalf("alter: %v %q", kerr.ErrorForCode(code), msg)
	}

	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = group, "share-member-1", 0, []string{"share-cfg"}
	hbResp, err := hb.RequestWith(ctx, cl)
	if err != nil || hbResp.ErrorCode != 0 {
		t.Fatalf("ShareGroupHeartbeat: %v %+v", err, hbResp)
	}
	if hbResp.HeartbeatIntervalMillis != 6000 {
		t.Fatalf("ShareGroupHeartbeat interval %d, want the group's 6000", hbResp.HeartbeatIntervalMillis)
	}

	f := &shareFetcher{t: t, cl: cl, group: group, member: "share-member-1", topicID: td["share-cfg"].ID}
	// wantAll polls ShareFetch until offsets 0-4 were acquired with
	// delivery count want.
	wantAll := func(want int16, within time.Duration) int32 {
		t.Helper()
		got := map[int64]int16{}
		var lock int32
		if err := proctest.Poll(within, 10*time.Millisecond, func() bool {
			var recs []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
			lock, recs = f.fetch(ctx)
			for _, r := range recs {
				for o := r.FirstOffset; o <= r.LastOffset; o++ {
					got[o] = r.DeliveryCount
				}
			}
			for o := range int64(5) {
				if got[o] != want {
					return false
				}
			}
			return true
		}); err != nil {
			t.Fatalf("offsets 0-4 not all acquired with delivery count %d: %v", want, got)
		}
		return lock
	}
	if lock := wantAll(1, 20*time.Second); lock != 2000 {
		t.Fatalf("ShareFetch lock %d, want the group's 2000", lock)
	}
	// Not acknowledged: the group's 2 s lock expires and the records are
	// acquired again, long before the node's 60 s would let them.
	wantAll(2, 20*time.Second)

	if code, msg := alterGroupConfigs(t, ctx, cl, group, false, setOp("share.record.lock.duration.ms", "3000")); code != 0 {
		t.Fatalf("alter the lock: %v %q", kerr.ErrorForCode(code), msg)
	}
	if lock, _ := f.fetch(ctx); lock != 3000 {
		t.Fatalf("ShareFetch lock after the alteration %d, want 3000", lock)
	}
	// Released at their second delivery, with the group's limit of 2 the
	// records are archived: the share-partition starts after them.
	f.acknowledge(ctx, 0, 4, 2)
	if p := shareOffsets(t, cl, group, "share-cfg", 1); len(p) != 1 || p[0].StartOffset != 5 {
		t.Fatalf("start offset after releasing at the delivery limit: %+v, want 5", p)
	}

	hb.MemberEpoch = -1
	if r, err := hb.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("leave: %v %+v", err, r)
	}
	if dr, err := adm.DeleteGroup(ctx, group); err != nil || dr.Err != nil {
		t.Fatalf("DeleteGroup: %v %v", err, dr.Err)
	}
	if vals, srcs, _ := describeGroupConfigs(t, ctx, cl, group); vals["share.record.lock.duration.ms"] != "60000" ||
		srcs["share.record.lock.duration.ms"] != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("configs of a deleted share group: %v %v", vals, srcs)
	}
}

// TestGroupConfigACLs: with the StandardAuthorizer, group configs need
// AlterConfigs or DescribeConfigs on the group itself, as in Kafka: alice,
// allowed both on group app-cfg, alters and describes it, and is refused
// GROUP_AUTHORIZATION_FAILED on another group (with no config written);
// Describe on the group alone does not let her describe its configs.
func TestGroupConfigACLs(t *testing.T) {
	a := startACLNode(t)
	ctx := proctest.Context(t, 60*time.Second)
	a.addACLs(t, ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Groups("app-cfg").
		Operations(kadm.OpAlterConfigs, kadm.OpDescribeConfigs))
	a.addACLs(t, ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Groups("other-cfg").Operations(kadm.OpDescribe))
	alice := a.client(t, "alice")
	if code, msg := alterGroupConfigs(t, ctx, alice, "app-cfg", false, setOp("consumer.session.timeout.ms", "50000")); code != 0 {
		t.Fatalf("alice altering app-cfg: %v %q", kerr.ErrorForCode(code), msg)
	}
	if vals, _, code := describeGroupConfigs(t, ctx, alice, "app-cfg"); code != 0 || vals["consumer.session.timeout.ms"] != "50000" {
		t.Fatalf("alice describing app-cfg: %v %v", kerr.ErrorForCode(code), vals)
	}
	if code, _ := alterGroupConfigs(t, ctx, alice, "other-cfg", false, setOp("consumer.session.timeout.ms", "50000")); code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("alice altering other-cfg: %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	if vals, _, code := describeGroupConfigs(t, ctx, alice, "other-cfg"); code != kerr.GroupAuthorizationFailed.Code || len(vals) != 0 {
		t.Fatalf("alice describing other-cfg: %v %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(code), vals)
	}
	admin := a.client(t, "admin")
	if vals, srcs, code := describeGroupConfigs(t, ctx, admin, "other-cfg"); code != 0 || srcs["consumer.session.timeout.ms"] != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("other-cfg after alice's refused alteration: %v %v %v", kerr.ErrorForCode(code), vals, srcs)
	}
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
	res.Configs = append(res.Configs, setOp("consumer.heartbeat.interval.ms", "7000"))
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
