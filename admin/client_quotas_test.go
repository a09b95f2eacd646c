package admin_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/quota"
)

// TestClientQuotaAPIs: kadm alters and describes client quotas with
// Kafka's filters and errors, and the node's quota manager follows the
// control plane.
func TestClientQuotaAPIs(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	adm := kadm.NewClient(testnode.Client(t, n.KafkaAddr()))
	ctx := proctest.Context(t, 30*time.Second)
	str := func(s string) *string { return &s }
	user := func(name *string) kadm.ClientQuotaEntityComponent {
		return kadm.ClientQuotaEntityComponent{Type: "user", Name: name}
	}
	client := func(name *string) kadm.ClientQuotaEntityComponent {
		return kadm.ClientQuotaEntityComponent{Type: "client-id", Name: name}
	}
	set := func(k string, v float64) []kadm.AlterClientQuotaOp {
		return []kadm.AlterClientQuotaOp{{Key: k, Value: v}}
	}
	entries := []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{user(str("alice"))}, Ops: set(quota.KeyProducerByteRate, 1000)},
		{Entity: kadm.ClientQuotaEntity{user(nil)}, Ops: set(quota.KeyProducerByteRate, 500)},
		{Entity: kadm.ClientQuotaEntity{user(str("alice")), client(str("app"))}, Ops: set(quota.KeyConsumerByteRate, 4000)},
		{Entity: kadm.ClientQuotaEntity{client(nil)}, Ops: set(quota.KeyRequestPercentage, 25)},
	}
	// validate_only changes nothing.
	if res, err := adm.ValidateAlterClientQuotas(ctx, entries); err != nil || res[0].Err != nil {
		t.Fatalf("validate: %v %v", res, err)
	}
	if d, err := adm.DescribeClientQuotas(ctx, false, nil); err != nil || len(d) != 0 {
		t.Fatalf("after validate_only: %v %v", d, err)
	}
	res, err := adm.AlterClientQuotas(ctx, entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}
	count := func(strict bool, comps ...kadm.DescribeClientQuotaComponent) int {
		t.Helper()
		d, err := adm.DescribeClientQuotas(ctx, strict, comps)
		if err != nil {
			t.Fatal(err)
		}
		return len(d)
	}
	exact := func(typ, name string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchName: str(name), MatchType: 0}
	}
	def := func(typ string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchType: 1}
	}
	anyOf := func(typ string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchType: 2}
	}
	for _, tc := range []struct {
		name   string
		strict bool
		comps  []kadm.DescribeClientQuotaComponent
		want   int
	}{
		{"all", false, nil, 4},
		{"user alice", false, []kadm.DescribeClientQuotaComponent{exact("user", "alice")}, 2},
		{"user alice strict", true, []kadm.DescribeClientQuotaComponent{exact("user", "alice")}, 1},
		{"default user", false, []kadm.DescribeClientQuotaComponent{def("user")}, 1},
		{"any user", false, []kadm.DescribeClientQuotaComponent{anyOf("user")}, 3},
		{"any client", false, []kadm.DescribeClientQuotaComponent{anyOf("client-id")}, 2},
		{"any client strict", true, []kadm.DescribeClientQuotaComponent{anyOf("client-id")}, 1},
		{"alice and app", true, []kadm.DescribeClientQuotaComponent{exact("user", "alice"), exact("client-id", "app")}, 1},
		{"bob", false, []kadm.DescribeClientQuotaComponent{exact("user", "bob")}, 0},
	} {
		if got := count(tc.strict, tc.comps...); got != tc.want {
			t.Errorf("describe %s: %d entities, want %d", tc.name, got, tc.want)
		}
	}
	// Kafka's errors: INVALID_REQUEST for the entry, which changes nothing.
	for _, e := range []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: "ip", Name: str("10.0.0.1")}}, Ops: set("connection_creation_rate", 5)},
		{Entity: kadm.ClientQuotaEntity{user(str("bob"))}, Ops: set("bogus", 5)},
		{Entity: kadm.ClientQuotaEntity{user(str("bob"))}, Ops: set(quota.KeyProducerByteRate, 1.5)},
		{Entity: kadm.ClientQuotaEntity{user(str("bob"))}, Ops: set(quota.KeyProducerByteRate, -1)},
		{Entity: kadm.ClientQuotaEntity{user(str("bob")), user(str("carol"))}, Ops: set(quota.KeyProducerByteRate, 1)},
		{Entity: kadm.ClientQuotaEntity{}, Ops: set(quota.KeyProducerByteRate, 1)},
	} {
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{e})
		if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.InvalidRequest) {
			t.Errorf("alter %v: %v %v, want INVALID_REQUEST", e, res, err)
		}
	}
	if _, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "ip", MatchType: 2}}); !errors.Is(err, kerr.InvalidRequest) {
		t.Errorf("describe ip: %v, want INVALID_REQUEST", err)
	}
	if got := count(false, exact("user", "bob")); got != 0 {
		t.Errorf("a failed alter stored bob: %d", got)
	}

	// The node's manager follows: precedence as Kafka's.
	proctest.Eventually(t, 10*time.Second, "the quota manager sees the quotas", func() bool {
		limit, from, ok := n.Quotas().Resolve(quota.Fetch, "alice", "app")
		return ok && limit == 4000 && from == quota.Entity{User: quota.Named("alice"), ClientID: quota.Named("app")}
	})
	for _, tc := range []struct {
		typ          quota.Type
		user, client string
		want         float64
	}{
		{quota.Produce, "alice", "app", 1000},
		{quota.Produce, "bob", "app", 500},
		{quota.Request, "bob", "x", 25},
	} {
		if limit, _, ok := n.Quotas().Resolve(tc.typ, tc.user, tc.client); !ok || limit != tc.want {
			t.Errorf("%v for %s/%s: %v %v, want %v", tc.typ, tc.user, tc.client, limit, ok, tc.want)
		}
	}
	// Removing a key removes it on the node.
	if res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{user(nil)},
		Ops: []kadm.AlterClientQuotaOp{{Key: quota.KeyProducerByteRate, Remove: true}}}}); err != nil || res[0].Err != nil {
		t.Fatalf("remove: %v %v", res, err)
	}
	proctest.Eventually(t, 10*time.Second, "the default user's quota is gone", func() bool {
		_, _, ok := n.Quotas().Resolve(quota.Produce, "bob", "app")
		return !ok
	})
}

// TestClientQuotasOnEveryNode: a quota altered through one node of a
// cluster is enforced by the others (each watches the control plane), and
// a producer to a partition another node leads is throttled there.
func TestClientQuotasOnEveryNode(t *testing.T) {
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 2, testnode.WithQuotaWindow(100*time.Millisecond))
	adm := kadm.NewClient(testnode.Client(t, nodes[0].KafkaAddr()))
	ctx := proctest.Context(t, 60*time.Second)
	name := "throttled"
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &name}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: quota.KeyProducerByteRate, Value: 10_000}},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter: %v %v", res, err)
	}
	for _, n := range nodes {
		proctest.Eventually(t, 10*time.Second, "every node enforces the quota", func() bool {
			limit, _, ok := n.Quotas().Resolve(quota.Produce, "ANONYMOUS", name)
			return ok && limit == 10_000
		})
	}
	// A topic with a partition on each node: the throttles come from both.
	if r, err := adm.CreateTopic(ctx, 2, 1, nil, "quota-cluster"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	leaders := map[int32]bool{}
	proctest.Eventually(t, 20*time.Second, "a leader for each partition, on both nodes", func() bool {
		md, err := adm.Metadata(ctx, "quota-cluster")
		if err != nil {
			return false
		}
		clear(leaders)
		for _, p := range md.Topics["quota-cluster"].Partitions {
			if p.Leader >= 0 {
				leaders[p.Leader] = true
			}
		}
		return len(leaders) == 2
	})
	throttledBy := map[int32]bool{}
	var mu sync.Mutex
	hook := brokerThrottleFunc(func(b kgo.BrokerMetadata) {
		mu.Lock()
		throttledBy[b.NodeID] = true
		mu.Unlock()
	})
	cl := testnode.Client(t, nodes[0].KafkaAddr(), kgo.ClientID(name), kgo.WithHooks(hook), kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	value := make([]byte, 1000)
	for i := 0; i < 200; i++ {
		mu.Lock()
		done := len(throttledBy) == 2
		mu.Unlock()
		if done {
			return
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "quota-cluster", Partition: int32(i % 2), Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("throttled by %v after 200 KB at 10 KB/s, want both nodes", throttledBy)
}

type brokerThrottleFunc func(kgo.BrokerMetadata)

func (f brokerThrottleFunc) OnBrokerThrottle(b kgo.BrokerMetadata, _ time.Duration, _ bool) { f(b) }

// TestClientQuotaAPIsAuthorized: with the authorizer on, a principal
// without DESCRIBE_CONFIGS and ALTER_CONFIGS on the cluster gets
// CLUSTER_AUTHORIZATION_FAILED from both APIs, and nothing is stored.
func TestClientQuotaAPIsAuthorized(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) { c.Authorizer, c.SuperUsers = "standard", "User:admin" })
	adm := kadm.NewClient(testnode.Client(t, n.KafkaAddr()))
	ctx := proctest.Context(t, 30*time.Second)
	name := "app"
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &name}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: quota.KeyProducerByteRate, Value: 1000}},
	}})
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alter as ANONYMOUS: %v %v, want CLUSTER_AUTHORIZATION_FAILED", res, err)
	}
	if _, err := adm.DescribeClientQuotas(ctx, false, nil); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("describe as ANONYMOUS: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	if _, _, ok := n.Quotas().Resolve(quota.Produce, "ANONYMOUS", name); ok {
		t.Fatal("a denied alteration reached the node")
	}
}
