package groupstest

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/group"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// shareLog records every delivery to share members (value -> delivery
// counts and who) and the values whose acceptance the broker confirmed.
type shareLog struct {
	mu        sync.Mutex
	counts    map[string][]int32
	by        map[string][]string
	confirmed map[string]bool
	again     []string // confirmed-accepted values delivered again
}

func newShareLog() *shareLog {
	return &shareLog{counts: map[string][]int32{}, by: map[string][]string{}, confirmed: map[string]bool{}}
}

func (l *shareLog) add(who string, r *kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := string(r.Value)
	if l.confirmed[v] {
		l.again = append(l.again, fmt.Sprintf("%s to %s (count %d)", v, who, r.DeliveryCount()))
	}
	l.counts[v] = append(l.counts[v], r.DeliveryCount())
	l.by[v] = append(l.by[v], who)
}

func (l *shareLog) confirm(vs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range vs {
		l.confirmed[v] = true
	}
}

// shareMember is a franz-go share consumer: it releases "rel-" records,
// rejects "rej-" ones and accepts the rest, flushing its acknowledgements
// after each poll; an accepted value counts as confirmed once a flush
// reports no error. A holding member acknowledges nothing and stops
// talking to the cluster once it has records (it dies holding locks).
type shareMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	got    chan struct{}
	once   sync.Once
}

func (c *cluster) startShareMember(t *testing.T, name, grp, topic string, log *shareLog, holding bool) *shareMember {
	var mu sync.Mutex
	ackErr := false
	cl := c.Client(kgo.ShareGroup(grp), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(300*time.Millisecond),
		kgo.RetryTimeout(30*time.Second), kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			if !rs.Ok() {
				mu.Lock()
				ackErr = true
				mu.Unlock()
			}
		}))
	ctx, cancel := context.WithCancel(context.Background())
	m := &shareMember{cl: cl, cancel: cancel, done: make(chan struct{}), got: make(chan struct{})}
	go func() { // ends on stop
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 100)
			var accepted []string
			fs.EachRecord(func(r *kgo.Record) {
				log.add(name, r)
				if holding {
					return
				}
				v := string(r.Value)
				ack := testnode.ShareAck(v)
				r.Ack(ack)
				if ack == kgo.AckAccept {
					accepted = append(accepted, v)
				}
			})
			if holding {
				if fs.NumRecords() > 0 {
					m.once.Do(func() { close(m.got) })
					<-ctx.Done() // never acknowledges, never polls again
					return
				}
				continue
			}
			mu.Lock()
			ackErr = false
			mu.Unlock()
			fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
			err := cl.FlushAcks(fctx)
			fcancel()
			mu.Lock()
			ok := err == nil && !ackErr
			mu.Unlock()
			if ok {
				log.confirm(accepted)
			}
		}
	}()
	t.Cleanup(m.stop)
	return m
}

func (m *shareMember) stop() {
	m.once.Do(func() { close(m.got) })
	m.cancel()
	<-m.done
	m.cl.Close()
}

// describeShare asks the group's coordinator for the share group.
func (c *cluster) describeShare(ctx context.Context, grp string) (kmsg.ShareGroupDescribeResponseGroup, error) {
	id, err := c.coordinator(ctx, grp)
	if err != nil {
		return kmsg.ShareGroupDescribeResponseGroup{}, err
	}
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{grp}
	resp, err := c.request(ctx, id, req)
	if err != nil {
		return kmsg.ShareGroupDescribeResponseGroup{}, err
	}
	gs := resp.(*kmsg.ShareGroupDescribeResponse).Groups
	if len(gs) != 1 || gs[0].ErrorCode != 0 {
		return kmsg.ShareGroupDescribeResponseGroup{}, fmt.Errorf("describe %s: %+v", grp, gs)
	}
	return gs[0], nil
}

// TestShareGroupCoordinatorKilled: franz-go share consumers on three nodes
// while the group's coordinator (the leader of its __consumer_offsets
// partition, which also leads a third of the topic's partitions and of
// __share_group_state) is killed mid-run. Members together see every
// acknowledged record at least once; no record whose acceptance the
// broker confirmed is delivered again (the share-partition state is
// persisted before acknowledgements are answered); released records are
// delivered with rising counts, at most the delivery limit; a member that
// dies holding records has them reacquired after the lock timeout.
func TestShareGroupCoordinatorKilled(t *testing.T) {
	const grp, topic, total = "share-failover", "jobs", 1500
	c := startCluster(t, "--group-share-heartbeat-interval", "300ms", "--group-share-session-timeout", "20s",
		"--group-share-record-lock-duration", "3s", "--group-share-delivery-count-limit", "3",
		"--share-auto-offset-reset", "earliest")
	ctx := proctest.Context(t, 5*time.Minute)
	cl := c.Client()
	adm := kadm.NewClient(cl)
	p := c.createWithCoordinator(t, ctx, adm, grp, topic)

	// The producer writes total records, and at every 500th a record each
	// member releases and one it rejects.
	prod := c.startProducer(ctx, topic, total, func(i int) []*kgo.Record {
		if i%500 != 0 {
			return nil
		}
		return []*kgo.Record{{Topic: topic, Value: []byte(fmt.Sprintf("rel-%d", i))}, {Topic: topic, Value: []byte(fmt.Sprintf("rej-%d", i))}}
	})
	defer prod.stop()

	log := newShareLog()
	c.startShareMember(t, "m1", grp, topic, log, false)
	c.startShareMember(t, "m2", grp, topic, log, false)
	if err := proctest.WaitFor(60*time.Second, func() bool {
		g, err := c.describeShare(ctx, grp)
		return err == nil && g.GroupState == "Stable" && len(g.Members) == 2
	}); err != nil {
		t.Fatal("share group never Stable with 2 members: ", err)
	}
	if err := proctest.WaitFor(60*time.Second, func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.confirmed) > 200
	}); err != nil {
		t.Fatal("no acceptance confirmed before the kill: ", err)
	}

	victim := c.waitInSync(group.OffsetsTopic, p, 3, 60*time.Second)
	before, err := c.describeShare(ctx, grp)
	if err != nil {
		t.Fatal(err)
	}
	c.node(victim).Kill()
	t.Logf("killed node %d, the share group's coordinator", victim)
	// The membership is in __consumer_offsets: the new coordinator has the
	// group at its epoch with both members, who heartbeat on at theirs.
	var after kmsg.ShareGroupDescribeResponseGroup
	if err := proctest.WaitFor(60*time.Second, func() bool {
		g, err := c.describeShare(ctx, grp)
		id, _ := c.coordinator(ctx, grp)
		after = g
		return err == nil && id != victim && len(g.Members) == 2
	}); err != nil {
		t.Fatal("the share group did not come back on another coordinator: ", err)
	}
	epochs := func(g kmsg.ShareGroupDescribeResponseGroup) map[string]int32 {
		out := map[string]int32{}
		for _, m := range g.Members {
			out[m.MemberID] = m.MemberEpoch
		}
		return out
	}
	if after.GroupEpoch != before.GroupEpoch || !maps.Equal(epochs(after), epochs(before)) {
		t.Errorf("after the move: group epoch %d members %v; before: %d %v", after.GroupEpoch, epochs(after), before.GroupEpoch, epochs(before))
	}
	t.Logf("the new coordinator has group epoch %d, members %v", after.GroupEpoch, epochs(after))
	<-prod.done
	c.node(victim).Start()
	c.node(victim).WaitReady()

	want := prod.ackedValues()
	if len(want) < total/2 {
		t.Fatalf("only %d of %d records acknowledged by the producer", len(want), total)
	}
	if err := proctest.WaitFor(120*time.Second, func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		for _, v := range want {
			if len(log.counts[v]) == 0 {
				return false
			}
		}
		return true
	}); err != nil {
		log.mu.Lock()
		miss := 0
		for _, v := range want {
			if len(log.counts[v]) == 0 {
				miss++
			}
		}
		log.mu.Unlock()
		t.Fatalf("%d of %d acknowledged records never delivered", miss, len(want))
	}

	// A member dies holding records; another gets them after the lock.
	holder := c.startShareMember(t, "holder", grp, topic, log, true)
	pcl := c.Client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := 0; i < 30; i++ {
		if err := pcl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("late-%d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-holder.got:
	case <-time.After(60 * time.Second):
		t.Fatal("the holding member never got records")
	}
	holder.cl.Close() // dies without acknowledging (its session close releases nothing it did not ack: the locks time out)
	if err := proctest.WaitFor(60*time.Second, func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		for i := 0; i < 30; i++ {
			by := log.by[fmt.Sprintf("late-%d", i)]
			if len(by) == 0 || (by[0] == "holder" && len(by) < 2) {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatal("records the dead member held were not reacquired: ", err)
	}

	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.again) > 0 {
		t.Errorf("%d confirmed-accepted records delivered again, first: %v", len(log.again), log.again[:min(5, len(log.again))])
	}
	for v, counts := range log.counts {
		if !strings.HasPrefix(v, "rel-") {
			continue
		}
		for i := 1; i < len(counts); i++ {
			if counts[i] <= counts[i-1] {
				t.Errorf("%s delivered with counts %v: not rising (share-partition state lost)", v, counts)
			}
		}
		if len(counts) > 3 {
			t.Errorf("%s delivered %d times, past the delivery limit 3", v, len(counts))
		}
	}
	dup := 0
	for v, counts := range log.counts {
		if strings.HasPrefix(v, "v-") && len(counts) > 1 {
			dup++
		}
	}
	t.Logf("%d confirmed acceptances; %d accepted records delivered more than once (unconfirmed when the node died, or a lock timed out)", len(log.confirmed), dup)
}
