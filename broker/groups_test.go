package broker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/testnode"
)

// produceN writes n records round-robin over the topic's partitions, with
// value "<tag>-<i>", and returns the end offset per partition.
func produceN(t *testing.T, addr, topic string, n int, tag string) map[int32]int64 {
	t.Helper()
	// A delivery timeout turns a stuck produce into an error, not a hang.
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordDeliveryTimeout(30*time.Second))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%s-%d", tag, i))}
	}
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ends := map[int32]int64{}
	for _, r := range recs {
		ends[r.Partition] = max(ends[r.Partition], r.Offset+1)
	}
	return ends
}

func createTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	resp, err := adm.CreateTopic(ctxT(t, 20*time.Second), partitions, 1, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
}

// committed fetches a group's committed offsets, retrying while the
// coordinator loads.
func committed(t *testing.T, adm *kadm.Client, grp string) kadm.OffsetResponses {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	for {
		resp, err := adm.FetchOffsets(ctx, grp)
		if err == nil && resp.Error() == nil {
			return resp
		}
		if ctx.Err() != nil {
			t.Fatalf("fetch offsets of %s: %v / %v", grp, err, resp.Error())
		}
	}
}

func TestGroupConsumeAndCommit(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	addr := n.KafkaAddr()
	adm := kadm.NewClient(newClient(t, addr))
	createTopic(t, adm, "gc", 3)
	ends := produceN(t, addr, "gc", 300, "v")

	cl := newClient(t, addr, kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("gc"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(6*time.Second))
	ctx := ctxT(t, 60*time.Second)
	seen := map[string]bool{}
	for len(seen) < 300 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 300", len(seen))
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := committed(t, adm, "g1")
	for p, end := range ends {
		o, ok := got.Lookup("gc", p)
		if !ok || o.At != end {
			t.Errorf("partition %d: committed %+v, want %d", p, o, end)
		}
	}
	described, err := adm.DescribeGroups(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	d := described["g1"]
	if d.State != "Stable" || len(d.Members) != 1 || d.Protocol != "cooperative-sticky" {
		t.Fatalf("describe: state %s, %d members, protocol %q, err %v", d.State, len(d.Members), d.Protocol, d.Err)
	}
}

// seenSet collects the values consumed by every member.
type seenSet struct {
	mu sync.Mutex
	m  map[string]int
}

func (s *seenSet) add(r *kgo.Record) {
	s.mu.Lock()
	s.m[string(r.Value)]++
	s.mu.Unlock()
}

func (s *seenSet) missing(tags []string, n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	miss := 0
	for _, tag := range tags {
		for i := range n {
			if s.m[fmt.Sprintf("%s-%d", tag, i)] == 0 {
				miss++
			}
		}
	}
	return miss
}

// crashDialer lets a test cut a client off the network at once, the way a
// killed process vanishes: open connections are closed and new dials fail,
// so no LeaveGroup ever reaches the broker.
type crashDialer struct {
	mu      sync.Mutex
	conns   []net.Conn
	crashed bool
}

func (d *crashDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.crashed {
		return nil, errors.New("crashed")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *crashDialer) crash() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.crashed = true
	for _, c := range d.conns {
		c.Close()
	}
}

// member is one group consumer running in a goroutine: poll, record what
// it saw, commit what it polled.
type member struct {
	cl     *kgo.Client
	dialer *crashDialer
	cancel context.CancelFunc
	done   chan struct{}
}

func startMember(t *testing.T, addr, grp, topic string, balancer kgo.GroupBalancer, seen *seenSet, extra ...kgo.Opt) *member {
	t.Helper()
	d := &crashDialer{}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(addr), kgo.Dialer(d.dial), kgo.RetryTimeout(5 * time.Second),
		kgo.ConsumerGroup(grp), kgo.ConsumeTopics(topic), kgo.Balancers(balancer),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(3 * time.Second), kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.RebalanceTimeout(10 * time.Second), kgo.FetchMaxWait(200 * time.Millisecond),
		// Commit what was processed before giving partitions up (eager and cooperative).
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
			cl.CommitUncommittedOffsets(ctx)
		}),
	}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{cl: cl, dialer: d, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(seen.add)
			if ctx.Err() == nil {
				cl.CommitUncommittedOffsets(ctx)
			}
		}
	}()
	t.Cleanup(m.stop)
	return m
}

// stop leaves the group (a graceful member) and closes the client.
func (m *member) stop() {
	m.cancel()
	<-m.done
	m.cl.Close()
}

// crash cuts the member off without a LeaveGroup: only the session
// timeout tells the coordinator.
func (m *member) crash() {
	m.cancel()
	<-m.done
	m.dialer.crash()
}

// waitStable polls until the group is Stable with n members, each with
// at least one partition assigned.
func waitStable(t *testing.T, adm *kadm.Client, grp string, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		described, err := adm.DescribeGroups(ctxT(t, 10*time.Second), grp)
		if err == nil {
			d := described[grp]
			ok := d.State == "Stable" && len(d.Members) == n
			for _, m := range d.Members {
				if ca, _ := m.Assigned.AsConsumer(); ca == nil || len(ca.Topics) == 0 {
					ok = false
				}
			}
			if ok {
				return
			}
			last = fmt.Sprintf("state %s, %d members", d.State, len(d.Members))
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s not stable with %d assigned members: %s %v", grp, n, last, err)
		}
		<-tick.C
	}
}

func TestGroupChurnAtLeastOnce(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	addr := n.KafkaAddr()
	adm := kadm.NewClient(newClient(t, addr))
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic, grp := "churn-"+tc.name, "churn-group-"+tc.name
			createTopic(t, adm, topic, 4)
			seen := &seenSet{m: map[string]int{}}
			const per = 300
			ends := map[int32]int64{}
			produce := func(tag string) {
				for p, e := range produceN(t, addr, topic, per, tag) {
					ends[p] = max(ends[p], e)
				}
			}
			m1 := startMember(t, addr, grp, topic, tc.balancer, seen)
			m2 := startMember(t, addr, grp, topic, tc.balancer, seen)
			produce("a")
			startMember(t, addr, grp, topic, tc.balancer, seen)
			produce("b")
			waitStable(t, adm, grp, 3)
			m1.stop() // leaves
			produce("c")
			waitStable(t, adm, grp, 2)
			m2.crash() // session timeout
			crashed := time.Now()
			produce("d")
			startMember(t, addr, grp, topic, tc.balancer, seen)
			produce("e")

			tags := []string{"a", "b", "c", "d", "e"}
			waitStable(t, adm, grp, 2)
			deadline := time.Now().Add(90 * time.Second)
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				miss := seen.missing(tags, per)
				behind := 0
				if miss == 0 {
					got := committed(t, adm, grp)
					for p, end := range ends {
						if o, ok := got.Lookup(topic, p); !ok || o.At != end {
							behind++
						}
					}
					if behind == 0 {
						t.Logf("all consumed and committed %v after the crash", time.Since(crashed))
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d records never consumed, %d partitions' commits behind the end", miss, behind)
				}
				<-tick.C
			}
			described, err := adm.DescribeGroups(ctxT(t, 10*time.Second), grp)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range described[grp].Members {
				ca, _ := m.Assigned.AsConsumer()
				t.Logf("member %s: %+v", m.MemberID, ca.Topics)
			}
			if d := described[grp]; len(d.Members) != 2 {
				t.Errorf("%d members after two left, want 2: %+v", len(d.Members), d)
			}
		})
	}
}
