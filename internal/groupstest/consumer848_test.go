package groupstest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/group"
	"github.com/shale-io/shale/internal/proctest"
)

// seen848 counts what the members consumed, by value.
type seen848 struct {
	mu sync.Mutex
	m  map[string]int
}

func (s *seen848) add(r *kgo.Record) { s.mu.Lock(); s.m[string(r.Value)]++; s.mu.Unlock() }

// checkCommittedOnce waits until grp's commits reach topic's end offsets,
// then fails the test for each value seen consumed more than once.
func checkCommittedOnce(t *testing.T, ctx context.Context, adm *kadm.Client, seen *seen848, grp, topic string) {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if err := proctest.WaitFor(60*time.Second, func() bool {
		got, err := adm.FetchOffsets(ctx, grp)
		if err != nil {
			return false
		}
		ok := true
		ends.Each(func(e kadm.ListedOffset) {
			if o, found := got.Lookup(topic, e.Partition); !found || o.At != e.Offset {
				ok = false
			}
		})
		return ok
	}); err != nil {
		t.Fatalf("commits never reached the end offsets: %v", err)
	}
	seen.mu.Lock()
	twice := 0
	for v, n := range seen.m {
		if n > 1 {
			if twice < 5 {
				t.Errorf("%s consumed %d times", v, n)
			}
			twice++
		}
	}
	seen.mu.Unlock()
	if twice > 0 {
		t.Fatalf("%d records consumed more than once", twice)
	}
}

// member848 is a franz-go KIP-848 member (ServerSideBalancer) that polls
// with rebalances blocked, records what it saw, commits it synchronously
// and only then lets a rebalance go on.
type member848 struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func (c *cluster) start848Member(t *testing.T, grp, topic string, seen *seen848) *member848 {
	cl := c.Client(kgo.ConsumerGroup(grp), kgo.ConsumeTopics(topic), kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ServerSideBalancer(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(), kgo.FetchMaxWait(200*time.Millisecond), kgo.RetryTimeout(30*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	m := &member848{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() { // ends on stop
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(seen.add)
			for i := 0; i < 20 && ctx.Err() == nil; i++ { // a commit the failover interrupted is tried again
				if err := cl.CommitUncommittedOffsets(context.Background()); err == nil {
					break
				}
				sleepCtx(ctx, 100*time.Millisecond)
			}
			cl.AllowRebalance()
		}
	}()
	t.Cleanup(m.stop)
	return m
}

func (m *member848) stop() {
	m.once.Do(func() {
		m.cancel()
		<-m.done
		m.cl.Close() // leaves the group
	})
}

// describe848 asks the group's coordinator (found anew) for the group.
func (c *cluster) describe848(ctx context.Context, grp string) (kmsg.ConsumerGroupDescribeResponseGroup, error) {
	coord, err := c.coordinator(ctx, grp)
	if err != nil {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, err
	}
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{grp}
	kresp, err := c.request(ctx, coord, req)
	if err != nil {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, err
	}
	resp := kresp.(*kmsg.ConsumerGroupDescribeResponse)
	if len(resp.Groups) != 1 {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, fmt.Errorf("%d groups answered", len(resp.Groups))
	}
	return resp.Groups[0], kerr.ErrorForCode(resp.Groups[0].ErrorCode)
}

// stable848 is the group when it is Stable with n members at the
// assignment epoch, each holding partitions.
func (c *cluster) stable848(t *testing.T, grp string, n int) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	var g kmsg.ConsumerGroupDescribeResponseGroup
	var last error
	if err := proctest.WaitFor(90*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if g, last = c.describe848(ctx, grp); last != nil || g.State != "Stable" || len(g.Members) != n {
			return false
		}
		for _, m := range g.Members {
			if m.MemberEpoch != g.AssignmentEpoch || len(m.Assignment.TopicPartitions) == 0 {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatalf("group %s not stable with %d members: %v: state %s, %d members (%v)", grp, n, err, g.State, len(g.Members), last)
	}
	return g
}

func memberEpochs(g kmsg.ConsumerGroupDescribeResponseGroup) map[string]int32 {
	out := map[string]int32{}
	for _, m := range g.Members {
		out[m.MemberID] = m.MemberEpoch
	}
	return out
}

// TestConsumerGroup848CoordinatorKilled: a KIP-848 group of franz-go
// members on three nodes keeps consuming while its coordinator is killed:
// the new coordinator reloads the group from __consumer_offsets (the same
// members at the same epochs, no new group epoch), a member then leaves and
// another joins, and every acknowledged record is consumed exactly once
// with the commits at the end.
func TestConsumerGroup848CoordinatorKilled(t *testing.T) {
	const grp, topic, total = "kip848-failover", "orders848", 3000
	c := startCluster(t, "--group-consumer-heartbeat-interval", "300ms", "--group-consumer-session-timeout", "20s")
	ctx := proctest.Context(t, 5*time.Minute)
	cl := c.Client()
	adm := kadm.NewClient(cl)
	p := c.createWithCoordinator(t, ctx, adm, grp, topic)

	// The producer writes total records, acks=all, a batch at a time.
	prod := c.startProducer(ctx, topic, total, nil)
	defer prod.stop()

	seen := &seen848{m: map[string]int{}}
	m1 := c.start848Member(t, grp, topic, seen)
	c.start848Member(t, grp, topic, seen)
	c.start848Member(t, grp, topic, seen)
	before := c.stable848(t, grp, 3)

	victim := c.waitInSync(group.OffsetsTopic, p, 3, 60*time.Second)
	if coord, err := c.coordinator(ctx, grp); err != nil || coord != victim {
		t.Fatalf("coordinator %d (%v), leader of %s-%d %d", coord, err, group.OffsetsTopic, p, victim)
	}
	c.node(victim).Kill()
	after := c.stable848(t, grp, 3)
	if coord, err := c.coordinator(ctx, grp); err != nil || coord == victim {
		t.Fatalf("coordinator after the kill of node %d: %d (%v)", victim, coord, err)
	}
	if after.Epoch != before.Epoch || fmt.Sprint(memberEpochs(after)) != fmt.Sprint(memberEpochs(before)) {
		t.Fatalf("the new coordinator's group: epoch %d, members %v; before the kill of node %d: epoch %d, members %v",
			after.Epoch, memberEpochs(after), victim, before.Epoch, memberEpochs(before))
	}
	t.Logf("killed coordinator %d; the group came back at epoch %d with its %d members", victim, after.Epoch, len(after.Members))

	m1.stop()
	c.start848Member(t, grp, topic, seen)
	c.node(victim).Start()
	c.node(victim).WaitReady()
	<-prod.done
	c.stable848(t, grp, 3)

	want := prod.ackedValues()
	if len(want) < total/2 {
		t.Fatalf("only %d of %d records acknowledged", len(want), total)
	}
	if err := proctest.WaitFor(90*time.Second, func() bool {
		seen.mu.Lock()
		defer seen.mu.Unlock()
		return !slices.ContainsFunc(want, func(v string) bool { return seen.m[v] == 0 })
	}); err != nil {
		t.Fatalf("acknowledged records never consumed: %v", err)
	}
	checkCommittedOnce(t, ctx, adm, seen, grp, topic)
	t.Logf("%d records acknowledged, each consumed once", len(want))
	c.CheckNoPanic()
}
