package testnode

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
)

// SeenSet collects the values consumed by every member of a group.
type SeenSet struct {
	mu sync.Mutex
	m  map[string]int
}

// NewSeenSet returns an empty SeenSet.
func NewSeenSet() *SeenSet { return &SeenSet{m: map[string]int{}} }

// Add counts r's value; safe for concurrent use.
func (s *SeenSet) Add(r *kgo.Record) { s.AddValue(string(r.Value)) }

// AddValue counts v; safe for concurrent use.
func (s *SeenSet) AddValue(v string) {
	s.mu.Lock()
	s.m[v]++
	s.mu.Unlock()
}

// Counts returns how many times each value was consumed (a copy).
func (s *SeenSet) Counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.m)
}

// Missing counts the values "<tag>-<i>" (ProduceN), i below n, of each
// tag that were never consumed.
func (s *SeenSet) Missing(tags []string, n int) int {
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

// CrashDialer lets a test cut a client off the network at once, the way a
// killed process vanishes: open connections are closed and new dials fail,
// so no LeaveGroup ever reaches the broker.
type CrashDialer struct {
	mu      sync.Mutex
	conns   []net.Conn
	crashed bool
}

// Dial is a kgo.Dialer.
func (d *CrashDialer) Dial(ctx context.Context, network, host string) (net.Conn, error) {
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

// Crash closes every connection dialled and fails the dials after it.
func (d *CrashDialer) Crash() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.crashed = true
	for _, c := range d.conns {
		c.Close()
	}
}

// Member is one group consumer running in a goroutine.
type Member struct {
	cl     *kgo.Client
	dialer *CrashDialer
	cancel context.CancelFunc
	done   chan struct{}
}

// RunMember makes a client of opts dialling through a new CrashDialer and
// calls poll with it in a goroutine until the member stops; the member
// stops when the test ends.
func RunMember(t testing.TB, opts []kgo.Opt, poll func(ctx context.Context, cl *kgo.Client)) *Member {
	t.Helper()
	return RunMemberOn(t, &CrashDialer{}, opts, poll)
}

// RunMemberOn is RunMember dialling through d, which poll may crash: a
// member that dies on its own, at a moment of its choosing.
func RunMemberOn(t testing.TB, d *CrashDialer, opts []kgo.Opt, poll func(ctx context.Context, cl *kgo.Client)) *Member {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.Dialer(d.Dial)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Member{cl: cl, dialer: d, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			poll(ctx, cl)
		}
	}()
	t.Cleanup(m.Stop)
	return m
}

// StartMember runs a classic-protocol consumer of topic in grp with
// balancer: poll, record what it saw in seen, commit what it polled.
func StartMember(t testing.TB, addr, grp, topic string, balancer kgo.GroupBalancer, seen *SeenSet, extra ...kgo.Opt) *Member {
	t.Helper()
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(addr), kgo.RetryTimeout(5 * time.Second),
		kgo.ConsumerGroup(grp), kgo.ConsumeTopics(topic), kgo.Balancers(balancer),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(3 * time.Second), kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.RebalanceTimeout(10 * time.Second), kgo.FetchMaxWait(200 * time.Millisecond),
		// Commit what was processed before giving partitions up (eager and cooperative).
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
			cl.CommitUncommittedOffsets(ctx)
		}),
	}, extra...)
	return RunMember(t, opts, func(ctx context.Context, cl *kgo.Client) {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(seen.Add)
		if ctx.Err() == nil {
			cl.CommitUncommittedOffsets(ctx)
		}
	})
}

// StartShareAcceptor runs a franz-go share consumer of topic in group
// (KIP-932) that accepts every record it gets; it leaves the group when
// stopped (Member.Stop) or when the test ends.
func StartShareAcceptor(t testing.TB, addr, group, topic string) *Member {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(20 * time.Second),
		kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(300 * time.Millisecond)}
	return RunMember(t, opts, func(ctx context.Context, cl *kgo.Client) {
		cl.PollRecords(ctx, 100).EachRecord(func(r *kgo.Record) { r.Ack(kgo.AckAccept) })
	})
}

// ShareAck is how the share group tests acknowledge a record, by its
// value: one starting "rel-" is released (delivered again), "rej-"
// rejected (archived), any other accepted.
func ShareAck(value string) kgo.AckStatus {
	switch {
	case strings.HasPrefix(value, "rel-"):
		return kgo.AckRelease
	case strings.HasPrefix(value, "rej-"):
		return kgo.AckReject
	}
	return kgo.AckAccept
}

// ShareStartOffsets is share group's start offset of each partition of
// topic (DescribeShareGroupOffsets), leaving out a partition answered
// with an error; empty while the group cannot be described.
func ShareStartOffsets(ctx context.Context, adm *kadm.Client, group, topic string) map[int32]int64 {
	out := map[int32]int64{}
	o, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		return out
	}
	for p, so := range o[group].Offsets[topic] {
		if so.Err == nil {
			out[p] = so.StartOffset
		}
	}
	return out
}

// Stop leaves the group (a graceful member) and closes the client; a
// second call does nothing.
func (m *Member) Stop() {
	m.cancel()
	<-m.done
	m.cl.Close()
}

// Crash cuts the member off without a LeaveGroup: only the session
// timeout tells the coordinator.
func (m *Member) Crash() {
	m.cancel()
	<-m.done
	m.dialer.Crash()
}

// WaitStable polls until the group is Stable with n members, each with
// at least one partition assigned.
func WaitStable(t testing.TB, adm *kadm.Client, grp string, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		described, err := adm.DescribeGroups(proctest.Context(t, 10*time.Second), grp)
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

// CommitSimple commits offsets for a group without members (kadm's
// CommitOffsets: generation -1), retrying while the coordinator loads.
func CommitSimple(t testing.TB, adm *kadm.Client, grp string, os kadm.Offsets) {
	t.Helper()
	ctx := proctest.Context(t, 30*time.Second)
	for {
		resp, err := adm.CommitOffsets(ctx, grp, os)
		if err == nil && resp.Error() == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("commit %s: %v / %v", grp, err, resp.Error())
		}
	}
}

// OnlyBroker returns the single node's broker handle: raw requests sent
// to it are answered by it, with no client-side retry of their error
// codes.
func OnlyBroker(t testing.TB, cl *kgo.Client) *kgo.Broker {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	resp, err := req.RequestWith(proctest.Context(t, 20*time.Second), cl)
	if err != nil || len(resp.Brokers) != 1 {
		t.Fatalf("metadata: %v %+v", err, resp)
	}
	return cl.Broker(int(resp.Brokers[0].NodeID))
}

// ListGroupsLoaded polls ListGroups until it answers without error and
// returns the groups listed. COORDINATOR_LOAD_IN_PROGRESS is the only
// error that may come first.
func ListGroupsLoaded(t testing.TB, b *kgo.Broker) []string {
	t.Helper()
	ctx := proctest.Context(t, 30*time.Second)
	for {
		req := kmsg.NewPtrListGroupsRequest()
		r, err := b.Request(ctx, req)
		if err != nil {
			t.Fatalf("list groups: %v", err)
		}
		resp := r.(*kmsg.ListGroupsResponse)
		switch resp.ErrorCode {
		case 0:
			var ids []string
			for _, g := range resp.Groups {
				ids = append(ids, g.Group)
			}
			slices.Sort(ids)
			return ids
		case kerr.CoordinatorLoadInProgress.Code:
			if len(resp.Groups) > 0 {
				t.Fatalf("a partial list while loading: %+v", resp.Groups)
			}
		default:
			t.Fatalf("list groups: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		if ctx.Err() != nil {
			t.Fatal("list groups: still loading")
		}
		PollTick(ctx)
	}
}

// PollTick paces a poll loop (a poll interval, not a timed assertion).
func PollTick(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(20 * time.Millisecond):
	}
}

// PollRecords polls cl until it has n records, failing the test after
// 30 s.
func PollRecords(t testing.TB, cl *kgo.Client, n int) {
	t.Helper()
	ctx := proctest.Context(t, 30*time.Second)
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", got, n)
		}
		got += fs.NumRecords()
	}
}
