package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/adminapi"
)

// offsetsTopic is Kafka's (and Shale's) consumer offsets topic.
const offsetsTopic = "__consumer_offsets"

// FaultWindow is one fault as it ran.
type FaultWindow struct {
	Kind   FaultKind     `json:"kind"`
	Target string        `json:"target"`
	Start  time.Duration `json:"start"` // since the run began
	End    time.Duration `json:"end"`   // when it was healed
	// Recovery is how long after End every partition had a leader and a
	// whole ISR again (node faults; -1 if not within the bound).
	Recovery time.Duration `json:"recovery"`
	Err      string        `json:"err,omitempty"`
}

// faulter runs a plan's events against a cluster.
type faulter struct {
	c      *Cluster
	rec    *recorder
	adm    *kadm.Client
	topics []string
	group  string
	// suspendGroup, if set, takes the group's member out for a coordinator
	// fault; the returned func lets it rejoin.
	suspendGroup func() (resume func())
	// bucket runs the bucket ops (nil: the schedule has none).
	bucket *bucketOps

	mu      sync.Mutex
	windows []FaultWindow
}

func newFaulter(c *Cluster, rec *recorder, topics []string, group string) (*faulter, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.RetryTimeout(5*time.Second), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		return nil, err
	}
	return &faulter{c: c, rec: rec, adm: kadm.NewClient(cl), topics: topics, group: group}, nil
}

func (f *faulter) close() { f.adm.Close() }

// partitions is the replica set, leader and ISR of every partition of the
// workload's topics and the offsets topic, as one node sees them.
type partState struct {
	leader   int32
	replicas []int32
	isr      []int32
}

func (f *faulter) state(ctx context.Context) (map[TP]partState, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := f.adm.Metadata(rctx, append(slices.Clone(f.topics), offsetsTopic)...)
	if err != nil {
		return nil, err
	}
	out := map[TP]partState{}
	for _, t := range m.Topics {
		if t.Err != nil {
			if t.Topic == offsetsTopic {
				continue // not created until the group's first request
			}
			return nil, fmt.Errorf("%s: %w", t.Topic, t.Err)
		}
		for _, p := range t.Partitions {
			isr := slices.Clone(p.ISR)
			reps := slices.Clone(p.Replicas)
			slices.Sort(isr)
			slices.Sort(reps)
			out[TP{t.Topic, p.Partition}] = partState{leader: p.Leader, replicas: reps, isr: isr}
		}
	}
	return out, nil
}

// settled reports whether every node is live and every partition has a
// leader and an ISR holding its whole replica set; why says what is not.
func (f *faulter) settled(ctx context.Context) (ok bool, why string) {
	for _, n := range f.c.Nodes {
		if !n.Alive() || n.Paused() {
			return false, n.Name + " down"
		}
	}
	st, err := f.state(ctx)
	if err != nil {
		return false, err.Error()
	}
	keys := make([]TP, 0, len(st))
	for tp := range st {
		keys = append(keys, tp)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, tp := range keys {
		s := st[tp]
		if s.leader < 0 || !slices.Equal(s.isr, s.replicas) {
			return false, fmt.Sprintf("%s leader %d replicas %v isr %v", tp, s.leader, s.replicas, s.isr)
		}
	}
	return true, ""
}

// waitSettled polls settled for up to d.
func (f *faulter) waitSettled(ctx context.Context, d time.Duration) (time.Duration, error) {
	begin := time.Now()
	var why string
	ok := poll(d, 250*time.Millisecond, func() bool {
		if ctx.Err() != nil {
			return true
		}
		var ok bool
		ok, why = f.settled(ctx)
		return ok
	})
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	if !ok {
		return 0, fmt.Errorf("not settled after %v: %s", d, why)
	}
	return time.Since(begin), nil
}

// runTrack runs the events of one track in order until ctx ends. Each
// event starts no earlier than its At (from phase), and a node fault only
// once the cluster has settled since the last one, so that no two nodes
// are ever down at once.
func (f *faulter) runTrack(ctx context.Context, phase time.Time, evs []Event) {
	for _, e := range evs {
		if wait := time.Until(phase.Add(e.At)); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		if ctx.Err() != nil {
			return
		}
		if e.Kind.track() == "node" || e.Kind == Reassign || e.Kind == Decommission || e.Kind.bucket() {
			if _, err := f.waitSettled(ctx, 60*time.Second); err != nil {
				f.rec.logf("skipping %s: %v", e.Kind, err)
				continue
			}
		}
		f.run(ctx, e)
	}
}

// run applies one event, waits its window (or until ctx ends), heals it,
// and for node faults measures the recovery.
func (f *faulter) run(ctx context.Context, e Event) {
	w := FaultWindow{Kind: e.Kind, Start: f.rec.since(), Recovery: -1}
	heal, target, err := f.apply(ctx, e)
	w.Target = target
	if err != nil {
		w.Err = err.Error()
		w.End = f.rec.since()
		f.rec.logf("fault %s %s: %v", e.Kind, target, err)
		f.addWindow(w)
		return
	}
	f.rec.logf("fault %s %s for %v", e.Kind, target, e.For)
	select {
	case <-ctx.Done():
	case <-time.After(e.For):
	}
	if heal != nil {
		if err := heal(); err != nil {
			w.Err = err.Error()
			f.rec.logf("heal %s %s: %v", e.Kind, target, err)
		}
	}
	w.End = f.rec.since()
	if e.Kind.track() == "node" {
		if d, err := f.waitSettled(context.Background(), 60*time.Second); err == nil {
			w.Recovery = d
		} else if w.Err == "" {
			w.Err = err.Error()
		}
	}
	f.addWindow(w)
}

func (f *faulter) addWindow(w FaultWindow) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.windows = append(f.windows, w)
}

// pickNode returns a live node by pick.
func (f *faulter) pickNode(pick int) (*Node, error) {
	var live []*Node
	for _, n := range f.c.Nodes {
		if n.Alive() && !n.Paused() {
			live = append(live, n)
		}
	}
	if len(live) == 0 {
		return nil, fmt.Errorf("no live node")
	}
	return live[pick%len(live)], nil
}

// restart starts a node and waits until it is ready. A node that exits
// before it is ready (shale serve gives up at once when it cannot reach
// NATS, as during a nats-kill) is started again, as a supervisor would,
// for up to 60 s.
func (f *faulter) restart(n *Node) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := n.Start(); err != nil {
			return err
		}
		err := f.c.waitReady(context.Background(), n, time.Until(deadline))
		if err == nil || n.Alive() || time.Now().After(deadline) {
			return err
		}
		f.rec.logf("%s exited before it was ready; starting it again", n.Name)
		time.Sleep(time.Second)
	}
}

// apply starts a fault and returns how to heal it.
func (f *faulter) apply(ctx context.Context, e Event) (heal func() error, target string, err error) {
	c := f.c
	switch e.Kind {
	case Kill, Pause, Wipe, PartNode, PartNATS, PartS3:
		n, err := f.pickNode(e.Pick)
		if err != nil {
			return nil, "", err
		}
		return f.nodeFault(e.Kind, n)
	case KillCoordinator, WipeCoordinator:
		n, err := f.coordinator(ctx)
		if err != nil {
			return nil, "", err
		}
		kind := Kill
		if e.Kind == WipeCoordinator {
			kind = Wipe
		}
		resume := func() {}
		if f.suspendGroup != nil {
			resume = f.suspendGroup()
		}
		heal, target, err := f.nodeFault(kind, n)
		if err != nil {
			resume()
			return nil, target, err
		}
		return func() error { defer resume(); return heal() }, target, nil
	case KillTxnCoordinator:
		n, err := f.txnCoordinator(ctx)
		if err != nil {
			return nil, "", err
		}
		return f.nodeFault(Kill, n)
	case WipeLastISR:
		return f.wipeLastISR(ctx, e)
	case Rolling:
		for _, n := range c.Nodes {
			if err := n.Terminate(20 * time.Second); err != nil {
				return nil, "all", err
			}
			if err := f.restart(n); err != nil {
				return nil, "all", err
			}
			if _, err := f.waitSettled(ctx, 60*time.Second); err != nil {
				if ctx.Err() != nil {
					return nil, "all", nil // the fault phase ended; the heal waits
				}
				return nil, "all", fmt.Errorf("after restarting %s: %w", n.Name, err)
			}
		}
		return nil, "all", nil
	case S3Errors:
		c.proxy.SetErrorRate(300)
		return func() error { c.proxy.SetErrorRate(0); return nil }, "s3", nil
	case S3Latency:
		c.proxy.SetDelay(300 * time.Millisecond)
		return func() error { c.proxy.SetDelay(0); return nil }, "s3", nil
	case S3Pause:
		if err := c.s3.Pause(); err != nil {
			return nil, "s3", err
		}
		return c.s3.Resume, "s3", nil
	case NATSKill:
		p := c.nats[e.Pick%len(c.nats)]
		if err := p.Kill(); err != nil {
			return nil, p.Name(), err
		}
		return p.Start, p.Name(), nil
	case NATSPause:
		for _, p := range c.nats {
			if err := p.Pause(); err != nil {
				return nil, "nats", err
			}
		}
		return func() error {
			var first error
			for _, p := range c.nats {
				if err := p.Resume(); err != nil && first == nil {
					first = err
				}
			}
			return first
		}, "nats", nil
	case Elect:
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := f.adm.ElectLeaders(rctx, kadm.ElectPreferredReplica, nil)
		return nil, "all", err
	case Reassign:
		return f.reassign(ctx, e.Pick)
	case Decommission:
		return f.decommission(ctx, e.Pick)
	case Restore, Fork, QuarantineRestore, QuarantinePurge:
		if f.bucket == nil {
			return nil, "", fmt.Errorf("%s: the run has no bucket ops' topics (Schedule.TierOps)", e.Kind)
		}
		target, err := f.bucket.run(ctx, e)
		return nil, target, err
	}
	return nil, "", fmt.Errorf("unknown fault %q", e.Kind)
}

// nodeFault applies a fault that takes node n out.
func (f *faulter) nodeFault(k FaultKind, n *Node) (func() error, string, error) {
	c := f.c
	switch k {
	case Kill:
		if err := n.Kill(); err != nil {
			return nil, n.Name, err
		}
		return func() error { return f.restart(n) }, n.Name, nil
	case Wipe:
		if err := n.Kill(); err != nil {
			return nil, n.Name, err
		}
		if err := os.RemoveAll(n.Dir); err != nil {
			return nil, n.Name, err
		}
		return func() error { return f.restart(n) }, n.Name, nil
	case Pause:
		if err := n.Pause(); err != nil {
			return nil, n.Name, err
		}
		return n.Resume, n.Name, nil
	case PartNode, PartNATS, PartS3:
		name := fmt.Sprintf("%s-%d", k, n.ID)
		var err error
		switch k {
		case PartNode:
			for _, o := range c.Nodes {
				if o == n {
					continue
				}
				if err = c.net.drop(name, n.Gid, port(o.Kafka)); err != nil {
					break
				}
				if err = c.net.drop(name, o.Gid, port(n.Kafka)); err != nil {
					break
				}
			}
		case PartNATS:
			err = c.net.drop(name, n.Gid, c.natsP...)
		case PartS3:
			err = c.net.drop(name, n.Gid, port(c.proxy.URL))
		}
		if err != nil {
			c.net.undrop(name)
			return nil, n.Name, err
		}
		return func() error { c.net.undrop(name); return nil }, n.Name, nil
	}
	return nil, n.Name, fmt.Errorf("not a node fault: %s", k)
}

// wipeLastISR is issue 15's node replacement of the last ISR member: of
// one partition of the workload's first topic, kill its two followers,
// wait until the ISR is the leader alone, kill the leader, delete its data
// dir, start the followers, wait the window, start the old leader. Every
// node is down for a moment (no acknowledged write can be lost: the
// followers still hold every record acknowledged before the ISR shrank,
// and none was acknowledged after, since min.insync.replicas=2).
func (f *faulter) wipeLastISR(ctx context.Context, e Event) (func() error, string, error) {
	st, err := f.state(ctx)
	if err != nil {
		return nil, "", err
	}
	tp := TP{f.topics[0], int32(e.Pick % 3)}
	s, ok := st[tp]
	if !ok || s.leader < 0 {
		return nil, tp.String(), fmt.Errorf("%s: no leader", tp)
	}
	byID := map[int32]*Node{}
	for _, n := range f.c.Nodes {
		byID[n.ID] = n
	}
	leader := byID[s.leader]
	var followers []*Node
	for _, id := range s.replicas {
		if id != s.leader {
			followers = append(followers, byID[id])
		}
	}
	target := fmt.Sprintf("%s leader %s", tp, leader.Name)
	for _, n := range followers {
		if err := n.Kill(); err != nil {
			return nil, target, err
		}
	}
	var last string
	if !poll(20*time.Second, 250*time.Millisecond, func() bool {
		st, err := f.state(ctx)
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("isr %v", st[tp].isr)
		return slices.Equal(st[tp].isr, []int32{leader.ID})
	}) {
		f.rec.logf("wipe-last-isr: %s: the ISR did not shrink to the leader alone (%s); going on", tp, last)
	}
	if err := leader.Kill(); err != nil {
		return nil, target, err
	}
	if err := os.RemoveAll(leader.Dir); err != nil {
		return nil, target, err
	}
	for _, n := range followers {
		if err := f.restart(n); err != nil {
			return nil, target, err
		}
	}
	return func() error { return f.restart(leader) }, target, nil
}

// coordinator is the node leading the group's offsets partition.
func (f *faulter) coordinator(ctx context.Context) (*Node, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rs := f.adm.FindGroupCoordinators(rctx, f.group)
	for _, r := range rs {
		if r.Err != nil {
			return nil, r.Err
		}
		for _, n := range f.c.Nodes {
			if n.ID == r.NodeID {
				return n, nil
			}
		}
	}
	return nil, fmt.Errorf("no coordinator for %s", f.group)
}

// txnCoordinator is the node leading the transactional pipeline's
// __transaction_state partition.
func (f *faulter) txnCoordinator(ctx context.Context) (*Node, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, r := range f.adm.FindTxnCoordinators(rctx, etlTxnID) {
		if r.Err != nil {
			return nil, r.Err
		}
		for _, n := range f.c.Nodes {
			if n.ID == r.NodeID {
				return n, nil
			}
		}
	}
	return nil, fmt.Errorf("no transaction coordinator for %s", etlTxnID)
}

// reassign moves one partition's replicas: onto a node outside its set
// when the cluster has one (the first replica replaced: the leader moves
// out), else rotated (another preferred leader); and back at the end.
func (f *faulter) reassign(ctx context.Context, pick int) (func() error, string, error) {
	st, err := f.state(ctx)
	if err != nil {
		return nil, "", err
	}
	var tps []TP
	for tp := range st {
		if tp.Topic != offsetsTopic {
			tps = append(tps, tp)
		}
	}
	if len(tps) == 0 {
		return nil, "", fmt.Errorf("no partitions")
	}
	sort.Slice(tps, func(i, j int) bool { return tps[i].String() < tps[j].String() })
	tp := tps[pick%len(tps)]
	s := st[tp]
	old := slices.Clone(s.replicas)
	// the leader first, so that moving out replica 0 moves out the leader
	if i := slices.Index(old, s.leader); i > 0 {
		old[0], old[i] = old[i], old[0]
	}
	var next []int32
	for _, n := range f.c.Nodes {
		if !slices.Contains(old, n.ID) {
			next = append([]int32{n.ID}, old[1:]...)
			break
		}
	}
	if next == nil {
		next = append(slices.Clone(old[1:]), old[0])
	}
	target := fmt.Sprintf("%s %v->%v", tp, old, next)
	alter := func(to []int32) error {
		var req kadm.AlterPartitionAssignmentsReq
		req.Assign(tp.Topic, tp.Partition, to)
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := f.adm.AlterPartitionAssignments(rctx, req)
		if err != nil {
			return err
		}
		return resp.Error()
	}
	if err := alter(next); err != nil {
		return nil, target, err
	}
	back := func() error {
		// The move back may fail for a moment (the controller moving
		// during a node or NATS fault of another track): try again for a
		// while. A replica of the old set that is down is accepted: a
		// broker stays registered, fenced, while it is down.
		var err error
		poll(30*time.Second, time.Second, func() bool { err = alter(old); return err == nil })
		return err
	}
	return back, target, nil
}

// decommission drains the node pick chooses through a live node's admin
// API (adminapi.DecommissionPath, what shale broker decommission sends);
// the heal recommissions it, retrying for a while (the node asked may be
// down for a moment under another track's fault). A drain the control
// plane refuses (it could not finish, with a node down) is the fault's
// error.
func (f *faulter) decommission(ctx context.Context, pick int) (func() error, string, error) {
	n := f.c.Nodes[pick%len(f.c.Nodes)]
	client := adminapi.Client{Timeout: 10 * time.Second}
	via := func() string {
		for _, m := range f.c.Nodes {
			if m.Alive() && !m.Paused() {
				return m.Admin
			}
		}
		return n.Admin
	}
	if _, err := client.Decommission(ctx, via(), []int32{n.ID}); err != nil {
		return nil, n.Name, err
	}
	back := func() error {
		var err error
		poll(30*time.Second, time.Second, func() bool {
			_, err = client.Recommission(context.Background(), via(), []int32{n.ID})
			return err == nil
		})
		return err
	}
	return back, n.Name, nil
}

// healAll undoes whatever is still applied: every node and NATS server
// running and resumed, no packet dropped, the S3 proxy passing, the S3
// server resumed.
func (f *faulter) healAll() error {
	c := f.c
	c.proxy.SetErrorRate(0)
	c.proxy.SetDelay(0)
	if c.s3.Paused() {
		c.s3.Resume()
	}
	for _, p := range c.nats {
		if p.Paused() {
			p.Resume()
		}
		if !p.Alive() {
			if err := p.Start(); err != nil {
				return err
			}
		}
	}
	if c.net.ok {
		c.net.mu.Lock()
		var names []string
		for name := range c.net.rules {
			names = append(names, name)
		}
		c.net.mu.Unlock()
		for _, name := range names {
			c.net.undrop(name)
		}
	}
	for _, n := range c.Nodes {
		if n.Paused() {
			n.Resume()
		}
		if !n.Alive() {
			if err := f.restart(n); err != nil {
				return err
			}
		}
	}
	return nil
}

// logsDir is a node's partition log directory.
func logsDir(n *Node, tp TP) string {
	return filepath.Join(n.Dir, "logs", tp.String())
}
