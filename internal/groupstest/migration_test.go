package groupstest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/group"
	"github.com/shale-io/shale/internal/proctest"
)

// commitRetrying commits what cl consumed, trying again (bounded) while a
// failover interrupts the coordinator.
func commitRetrying(ctx context.Context, cl *kgo.Client) {
	for i := 0; i < 50 && ctx.Err() == nil; i++ {
		if err := cl.CommitUncommittedOffsets(ctx); err == nil {
			return
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// startClassicMember is a franz-go classic (cooperative-sticky) member
// that records what it consumed, commits after each poll and before it
// gives partitions up.
func (c *cluster) startClassicMember(t *testing.T, grp, topic string, seen *seen848) *member848 {
	cl := c.Client(kgo.ConsumerGroup(grp), kgo.ConsumeTopics(topic), kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(300*time.Millisecond), kgo.RebalanceTimeout(20*time.Second),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.RetryTimeout(30*time.Second),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) { commitRetrying(ctx, cl) }))
	ctx, cancel := context.WithCancel(context.Background())
	m := &member848{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() { // ends on stop
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(seen.add)
			commitRetrying(ctx, cl)
		}
	}()
	t.Cleanup(m.stop)
	return m
}

// classicCount is the number of classic members (MemberType 0) of g.
func classicCount(g kmsg.ConsumerGroupDescribeResponseGroup) int {
	n := 0
	for _, m := range g.Members {
		if m.MemberType == 0 {
			n++
		}
	}
	return n
}

// TestClassicGroupMigrationCoordinatorKilled: a classic franz-go group on
// three nodes is migrated to the KIP-848 protocol member by member; half
// way, with classic and KIP-848 members in the consumer group, its
// coordinator is killed: the new coordinator reloads the mixed group from
// __consumer_offsets (classic members with their classic metadata, the
// same epochs), the migration goes on, and every record is consumed once.
func TestClassicGroupMigrationCoordinatorKilled(t *testing.T) {
	const grp, topic, per = "migrate-failover", "orders-migrate", 300
	c := startCluster(t, "--group-consumer-heartbeat-interval", "300ms", "--group-consumer-session-timeout", "20s")
	ctx := proctest.Context(t, 5*time.Minute)
	adm := kadm.NewClient(c.Client())
	p := c.createWithCoordinator(t, ctx, adm, grp, topic)

	pcl := c.Client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordDeliveryTimeout(60*time.Second))
	var want []string
	produce := func(tag string) {
		recs := make([]*kgo.Record, 0, per)
		for i := range per {
			recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%s-%d", tag, i))})
		}
		if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", tag, err)
		}
		for _, r := range recs {
			want = append(want, string(r.Value))
		}
	}

	seen := &seen848{m: map[string]int{}}
	var classic []*member848
	for range 3 {
		classic = append(classic, c.startClassicMember(t, grp, topic, seen))
	}
	produce("a")
	if err := proctest.WaitFor(60*time.Second, func() bool {
		d, err := adm.DescribeGroups(ctx, grp)
		return err == nil && d[grp].State == "Stable" && len(d[grp].Members) == 3
	}); err != nil {
		t.Fatalf("classic group not stable: %v", err)
	}

	// One member replaced: the group is a consumer group of two classic
	// members and one KIP-848 member.
	c.start848Member(t, grp, topic, seen)
	produce("b")
	c.stable848(t, grp, 4)
	classic[0].stop()
	before := c.stable848(t, grp, 3)
	if n := classicCount(before); n != 2 {
		t.Fatalf("%d classic members, want 2", n)
	}

	victim := c.waitInSync(group.OffsetsTopic, p, 3, 60*time.Second)
	if coord, err := c.coordinator(ctx, grp); err != nil || coord != victim {
		t.Fatalf("coordinator %d (%v), leader of %s-%d %d", coord, err, group.OffsetsTopic, p, victim)
	}
	c.node(victim).Kill()
	produce("c")
	after := c.stable848(t, grp, 3)
	if coord, err := c.coordinator(ctx, grp); err != nil || coord == victim {
		t.Fatalf("coordinator after the kill of node %d: %d (%v)", victim, coord, err)
	}
	if classicCount(after) != 2 || fmt.Sprint(memberEpochs(after)) != fmt.Sprint(memberEpochs(before)) {
		t.Fatalf("the new coordinator's group: %d classic members, epochs %v; before the kill: epochs %v",
			classicCount(after), memberEpochs(after), memberEpochs(before))
	}
	t.Logf("killed coordinator %d mid-migration; the group came back at epoch %d with %d classic members", victim, after.Epoch, classicCount(after))

	for _, cm := range classic[1:] {
		c.start848Member(t, grp, topic, seen)
		c.stable848(t, grp, 4)
		cm.stop()
		c.stable848(t, grp, 3)
	}
	c.node(victim).Start()
	c.node(victim).WaitReady()
	produce("d")
	if g := c.stable848(t, grp, 3); classicCount(g) != 0 {
		t.Fatalf("%d classic members left after the migration", classicCount(g))
	}

	if err := proctest.WaitFor(90*time.Second, func() bool {
		seen.mu.Lock()
		defer seen.mu.Unlock()
		for _, v := range want {
			if seen.m[v] == 0 {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatalf("records never consumed: %v", err)
	}
	checkCommittedOnce(t, ctx, adm, seen, grp, topic)
	t.Logf("%d records, each consumed once", len(want))
	c.CheckNoPanic()
}
