package group_test

import (
	"context"
	"fmt"
	"slices"
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

// fastConsumerGroups makes KIP-848 members heartbeat every 200 ms, so a
// rebalance takes a few heartbeats of that, not of Kafka's 5 s.
func fastConsumerGroups(c *config.Broker) {
	c.GroupConsumerHeartbeatInterval = 200 * time.Millisecond
	c.GroupConsumerSessionTimeout = 6 * time.Second
}

// start848Member is a KIP-848 (server-side assignment) member that polls
// with rebalances blocked, records what it saw, commits it synchronously
// and only then lets a revocation proceed: each record is processed once
// as long as the coordinator never gives a partition to two members and
// keeps every acknowledged commit.
func start848Member(t *testing.T, addr, grp, topic string, seen *testnode.SeenSet, extra ...kgo.Opt) *testnode.Member {
	t.Helper()
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(addr), kgo.RetryTimeout(10 * time.Second),
		kgo.ConsumerGroup(grp), kgo.ConsumeTopics(topic), kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ServerSideBalancer(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(), kgo.FetchMaxWait(200 * time.Millisecond),
	}, extra...)
	return testnode.RunMember(t, opts, func(ctx context.Context, cl *kgo.Client) {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(seen.Add)
		if err := cl.CommitUncommittedOffsets(context.Background()); err != nil {
			t.Logf("commit: %v", err)
		}
		cl.AllowRebalance()
	})
}

// describe848 asks ConsumerGroupDescribe for one group.
func describe848(ctx context.Context, cl *kgo.Client, grp string) (kmsg.ConsumerGroupDescribeResponseGroup, error) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{grp}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, err
	}
	if len(resp.Groups) != 1 {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, fmt.Errorf("%d groups answered", len(resp.Groups))
	}
	g := resp.Groups[0]
	return g, kerr.ErrorForCode(g.ErrorCode)
}

// wait848Stable polls until the consumer group is Stable with n members,
// each at the assignment epoch and holding partitions.
func wait848Stable(t *testing.T, cl *kgo.Client, grp string, n int) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	last := ""
	var stable kmsg.ConsumerGroupDescribeResponseGroup
	if err := proctest.Poll(60*time.Second, 50*time.Millisecond, func() bool {
		g, err := describe848(proctest.Context(t, 10*time.Second), cl, grp)
		if err != nil {
			last = err.Error()
			return false
		}
		ok := g.State == "Stable" && len(g.Members) == n
		for _, m := range g.Members {
			if m.MemberEpoch != g.AssignmentEpoch || len(m.Assignment.TopicPartitions) == 0 {
				ok = false
			}
		}
		stable = g
		last = fmt.Sprintf("state %s, epoch %d/%d, %d members", g.State, g.Epoch, g.AssignmentEpoch, len(g.Members))
		return ok
	}); err != nil {
		t.Fatalf("consumer group %s not stable with %d members: %s", grp, n, last)
	}
	return stable
}

// waitConsumedOnce waits until every record of tags was seen and the
// commits reached the partitions' ends, then checks that no record was
// seen twice.
func waitConsumedOnce(t *testing.T, adm *kadm.Client, seen *testnode.SeenSet, grp, topic string, tags []string, per int, ends map[int32]int64) {
	t.Helper()
	var miss, behind int
	if err := proctest.Poll(90*time.Second, 100*time.Millisecond, func() bool {
		miss, behind = seen.Missing(tags, per), 0
		if miss > 0 {
			return false
		}
		got := testnode.Committed(t, adm, grp)
		for p, end := range ends {
			if o, ok := got.Lookup(topic, p); !ok || o.At != end {
				behind++
			}
		}
		return behind == 0
	}); err != nil {
		t.Fatalf("%d records never consumed, %d partitions' commits behind the end", miss, behind)
	}
	twice := 0
	for v, n := range seen.Counts() {
		if n > 1 {
			if twice < 5 {
				t.Errorf("%s consumed %d times", v, n)
			}
			twice++
		}
	}
	if twice > 0 {
		t.Fatalf("%d records consumed more than once", twice)
	}
}

// TestConsumerGroup848ChurnExactlyOnce: franz-go members in a KIP-848
// group (ServerSideBalancer: ConsumerGroupHeartbeat, the uniform assignor)
// join and leave while records flow; every record is consumed exactly
// once and the commits reach the end.
func TestConsumerGroup848ChurnExactlyOnce(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), fastConsumerGroups)
	addr := n.KafkaAddr()
	adm := kadm.NewClient(testnode.Client(t, addr))
	const topic, grp, per = "churn848", "churn848-group", 300
	testnode.CreateTopic(t, adm, topic, 6)
	seen := testnode.NewSeenSet()
	ends := testnode.Ends{}
	produce := func(tag string) { ends.Produce(t, addr, topic, per, tag) }
	desc := testnode.Client(t, addr)
	m1 := start848Member(t, addr, grp, topic, seen)
	m2 := start848Member(t, addr, grp, topic, seen)
	produce("a")
	start848Member(t, addr, grp, topic, seen)
	produce("b")
	g := wait848Stable(t, desc, grp, 3)
	if g.AssignorName != "uniform" {
		t.Errorf("assignor %q, want uniform", g.AssignorName)
	}
	counts := []int{}
	for _, m := range g.Members {
		c := 0
		for _, tp := range m.Assignment.TopicPartitions {
			c += len(tp.Partitions)
			if tp.Topic != topic {
				t.Errorf("assigned topic %q (%x), want %s", tp.Topic, tp.TopicID, topic)
			}
		}
		counts = append(counts, c)
	}
	if !slices.Equal(counts, []int{2, 2, 2}) {
		t.Errorf("partitions per member %v, want 2 each (uniform over 6)", counts)
	}
	m1.Stop()
	produce("c")
	start848Member(t, addr, grp, topic, seen)
	m2.Stop()
	produce("d")
	wait848Stable(t, desc, grp, 2)
	waitConsumedOnce(t, adm, seen, grp, topic, []string{"a", "b", "c", "d"}, per, ends)
}

// TestConsumerGroup848StaticRejoin: a static member (instance id) that
// leaves and comes back under a new member id gets the same partitions
// without a new group epoch: no rebalance of the others.
func TestConsumerGroup848StaticRejoin(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), fastConsumerGroups)
	addr := n.KafkaAddr()
	adm := kadm.NewClient(testnode.Client(t, addr))
	const topic, grp = "static848", "static848-group"
	testnode.CreateTopic(t, adm, topic, 4)
	seen := testnode.NewSeenSet()
	desc := testnode.Client(t, addr)
	s1 := start848Member(t, addr, grp, topic, seen, kgo.InstanceID("s1"))
	start848Member(t, addr, grp, topic, seen)
	before := wait848Stable(t, desc, grp, 2)
	staticOf := func(g kmsg.ConsumerGroupDescribeResponseGroup) kmsg.ConsumerGroupDescribeResponseGroupMember {
		for _, m := range g.Members {
			if m.InstanceID != nil && *m.InstanceID == "s1" {
				return m
			}
		}
		t.Fatalf("no member with instance id s1 in %+v", g.Members)
		return kmsg.ConsumerGroupDescribeResponseGroupMember{}
	}
	old := staticOf(before)
	s1.Stop() // leaves with epoch -2: the assignment stays
	g, err := describe848(proctest.Context(t, 10*time.Second), desc, grp)
	if err != nil {
		t.Fatal(err)
	}
	if left := staticOf(g); left.MemberEpoch != -2 || left.MemberID != old.MemberID {
		t.Fatalf("after the static leave: member %s epoch %d, want %s at -2", left.MemberID, left.MemberEpoch, old.MemberID)
	}
	start848Member(t, addr, grp, topic, seen, kgo.InstanceID("s1"))
	var back kmsg.ConsumerGroupDescribeResponseGroupMember
	if perr := proctest.Poll(30*time.Second, 50*time.Millisecond, func() bool {
		g, err = describe848(proctest.Context(t, 10*time.Second), desc, grp)
		if err != nil {
			return false
		}
		back = staticOf(g)
		return back.MemberID != old.MemberID && back.MemberEpoch == g.AssignmentEpoch
	}); perr != nil {
		t.Fatalf("the static member did not come back: %+v (%v)", g, err)
	}
	if g.Epoch != before.Epoch || g.AssignmentEpoch != before.AssignmentEpoch {
		t.Errorf("group epoch %d/%d after the static rejoin, %d/%d before: a rebalance", g.Epoch, g.AssignmentEpoch, before.Epoch, before.AssignmentEpoch)
	}
	if fmt.Sprint(back.Assignment.TopicPartitions) != fmt.Sprint(old.Assignment.TopicPartitions) {
		t.Errorf("assignment after the rejoin %v, before %v", back.Assignment.TopicPartitions, old.Assignment.TopicPartitions)
	}
	if len(g.Members) != 2 {
		t.Errorf("%d members, want 2", len(g.Members))
	}

	// ListGroups v5 types the group; DescribeGroups describes it as Kafka 4
	// does to a classic client.
	list := func(types ...string) map[string]kmsg.ListGroupsResponseGroup {
		req := kmsg.NewPtrListGroupsRequest()
		req.TypesFilter = types
		resp, err := req.RequestWith(proctest.Context(t, 10*time.Second), desc)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("ListGroups %v: %v %v", types, err, resp)
		}
		out := map[string]kmsg.ListGroupsResponseGroup{}
		for _, lg := range resp.Groups {
			out[lg.Group] = lg
		}
		return out
	}
	if lg, ok := list("Consumer")[grp]; !ok || lg.GroupType != "consumer" || lg.ProtocolType != "consumer" || lg.GroupState != "Stable" {
		t.Errorf("ListGroups with types [Consumer]: %+v (listed %v)", lg, ok)
	}
	if _, ok := list("classic")[grp]; ok {
		t.Errorf("ListGroups with types [classic] lists the consumer group")
	}
	described, err := adm.DescribeGroups(proctest.Context(t, 10*time.Second), grp)
	if err != nil {
		t.Fatal(err)
	}
	d := described[grp]
	if d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol != "uniform" || len(d.Members) != 2 {
		t.Fatalf("DescribeGroups: state %s, protocol type %q, protocol %q, %d members", d.State, d.ProtocolType, d.Protocol, len(d.Members))
	}
	for _, m := range d.Members {
		if ca, ok := m.Assigned.AsConsumer(); !ok || len(ca.Topics) != 1 || ca.Topics[0].Topic != topic || len(ca.Topics[0].Partitions) != 2 {
			t.Errorf("DescribeGroups member %s: assignment %+v", m.MemberID, ca)
		}
	}
}

// TestConsumerGroup848Regex: a member subscribed by regular expression
// (KIP-848's SubscribedTopicRegex, RE2 on whole names) is assigned the
// topics that match, and one created later, not the others.
func TestConsumerGroup848Regex(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), fastConsumerGroups)
	addr := n.KafkaAddr()
	adm := kadm.NewClient(testnode.Client(t, addr))
	const grp = "regex848-group"
	testnode.CreateTopic(t, adm, "rx-a", 2)
	testnode.CreateTopic(t, adm, "rx-b", 1)
	testnode.CreateTopic(t, adm, "other", 2)
	seen := testnode.NewSeenSet()
	desc := testnode.Client(t, addr)
	start848Member(t, addr, grp, "rx-.*", seen, kgo.ConsumeRegex())
	assigned := func(want map[string]int) {
		t.Helper()
		var got map[string]int
		var err error
		var g kmsg.ConsumerGroupDescribeResponseGroup
		if perr := proctest.Poll(30*time.Second, 50*time.Millisecond, func() bool {
			g, err = describe848(proctest.Context(t, 10*time.Second), desc, grp)
			if err != nil || len(g.Members) != 1 || g.Members[0].MemberEpoch != g.AssignmentEpoch {
				return false
			}
			got = map[string]int{}
			for _, tp := range g.Members[0].Assignment.TopicPartitions {
				got[tp.Topic] = len(tp.Partitions)
			}
			return fmt.Sprint(got) == fmt.Sprint(want)
		}); perr != nil {
			t.Fatalf("assigned %v, want %v (%v)", got, want, err)
		}
		if g.Members[0].SubscribedTopicRegex == nil {
			t.Errorf("the member's regex is not described")
		}
	}
	assigned(map[string]int{"rx-a": 2, "rx-b": 1})
	testnode.CreateTopic(t, adm, "rx-c", 3)
	assigned(map[string]int{"rx-a": 2, "rx-b": 1, "rx-c": 3})
	testnode.ProduceN(t, addr, "rx-c", 30, "c")
	if err := proctest.Poll(30*time.Second, 50*time.Millisecond, func() bool { return seen.Missing([]string{"c"}, 30) == 0 }); err != nil {
		t.Fatalf("%d records of rx-c never consumed", seen.Missing([]string{"c"}, 30))
	}
}
