package coordinator

import (
	"errors"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/partition"
)

// switchLeader leads partition 0 of topic t with rep while leading is set.
type switchLeader struct {
	rep     *partition.Replica
	leading atomic.Bool
}

func (s *switchLeader) Leader(topic string, p int32) (*partition.Replica, error) {
	if topic != "t" || p != 0 {
		return nil, partition.ErrUnknownTopicOrPartition
	}
	if !s.leading.Load() {
		return nil, partition.ErrNotLeader
	}
	return s.rep, nil
}

// recordingShard records the runtime's calls; Load blocks until release
// is closed.
type recordingShard struct {
	part    *Partition
	release chan struct{}
	mu      sync.Mutex
	calls   []string
}

func (s *recordingShard) note(c string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
}

func (s *recordingShard) Load() error { <-s.release; s.note("load"); return nil }
func (s *recordingShard) Activate()   { s.note("activate") }
func (s *recordingShard) Unload()     { s.note("unload") }

func (s *recordingShard) history() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// The runtime loads a partition on leadership without a request, answers
// ErrLoadInProgress until the shard is activated, makes a new shard for a
// new leader epoch (unloading the old one), unloads on losing leadership
// and on Close, and calls each hook once, in order.
func TestRuntimeShardLifecycle(t *testing.T) {
	rep, err := partition.Open(partition.Options{Dir: t.TempDir(), Topic: "t", Partition: 0,
		Config: config.ResolveTopic(nil, nil), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rep.Close() })
	rep.SetLeadership(true, 3)
	leaders := &switchLeader{rep: rep}
	leaders.leading.Store(true)
	made := make(chan *recordingShard, 4)
	rt := New(Config[*recordingShard]{Topic: "t", Partitions: 1, Leaders: leaders,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		NewShard: func(p *Partition) *recordingShard {
			s := &recordingShard{part: p, release: make(chan struct{})}
			made <- s
			return s
		}})
	closed := false
	t.Cleanup(func() {
		if !closed {
			rt.Close()
		}
	})

	rt.LeadershipChanged(0)
	first := <-made
	if first.part.Epoch != 3 || first.part.Index != 0 || first.part.Replica != rep {
		t.Fatalf("shard of %+v", first.part)
	}
	if _, err := rt.Shard(0); !errors.Is(err, ErrLoadInProgress) {
		t.Fatalf("Shard while loading: %v, want ErrLoadInProgress", err)
	}
	if _, err := rt.Listable(); !errors.Is(err, ErrLoadInProgress) {
		t.Fatalf("Listable while loading: %v, want ErrLoadInProgress", err)
	}
	close(first.release)
	waitShard(t, rt, first)
	if got, err := rt.Listable(); err != nil || len(got) != 1 || got[0] != first {
		t.Fatalf("Listable: %v %v", got, err)
	}

	rep.SetLeadership(true, 4) // a new leader epoch: a new shard
	rt.LeadershipChanged(0)
	second := <-made
	if second.part.Epoch != 4 {
		t.Fatalf("second shard's epoch %d, want 4", second.part.Epoch)
	}
	if h := first.history(); len(h) != 3 || h[2] != "unload" {
		t.Fatalf("first shard: %v, want load, activate, unload", h)
	}
	if first.part.Context().Err() == nil {
		t.Fatal("an unloaded shard's context is not cancelled")
	}
	close(second.release)
	waitShard(t, rt, second)

	leaders.leading.Store(false)
	rt.LeadershipChanged(0)
	if _, err := rt.Shard(0); !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("Shard without leadership: %v, want ErrNotCoordinator", err)
	}
	if h := second.history(); len(h) != 3 || h[2] != "unload" {
		t.Fatalf("second shard: %v, want load, activate, unload", h)
	}

	leaders.leading.Store(true)
	release := rt.HoldLoads() // the third shard's load waits for a slot
	rt.LeadershipChanged(0)
	third := <-made
	rt.Close() // unloads the shard still waiting; its Load never runs
	closed = true
	release()
	if h := third.history(); len(h) != 1 || h[0] != "unload" {
		t.Fatalf("third shard: %v, want unload only", h)
	}
	if _, err := rt.Shard(0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Shard after Close: %v, want ErrClosed", err)
	}
	if rt.Go(func() {}) {
		t.Fatal("Go ran a goroutine after Close")
	}
}

// waitShard waits for s to be the loaded shard of partition 0. The load
// runs on its own goroutine; Loaded is polled without a clock.
func waitShard(t *testing.T, rt *Runtime[*recordingShard], s *recordingShard) {
	t.Helper()
	for range 1_000_000 {
		if got, ok := rt.Loaded(0); ok {
			if got != s {
				t.Fatal("another shard is loaded")
			}
			if sh, err := rt.Shard(0); err != nil || sh != s {
				t.Fatalf("Shard: %v %v", sh, err)
			}
			return
		}
		runtimeGosched()
	}
	t.Fatal("the shard never loaded")
}

func runtimeGosched() { runtime.Gosched() }

// localLeaders holds one replica per partition, leader or not, and counts
// the Leader lookups.
type localLeaders struct {
	reps    map[int32]*partition.Replica
	lookups atomic.Int64
}

func (l *localLeaders) Leader(topic string, p int32) (*partition.Replica, error) {
	l.lookups.Add(1)
	rep, ok := l.reps[p]
	switch {
	case topic != "t" || !ok:
		return nil, partition.ErrUnknownTopicOrPartition
	case !rep.IsLeader():
		return nil, partition.ErrNotLeader
	}
	return rep, nil
}

func (l *localLeaders) Local(topic string, p int32) (*partition.Replica, bool) {
	rep, ok := l.reps[p]
	return rep, ok && topic == "t"
}

// LoadLed's sweep looks a partition up only when its slot may change: one
// led in an epoch not loaded, or one that stopped leading with a slot
// left; every other partition, led and loaded or not led here, costs no
// lookup, and the loads and unloads are those LeadershipChanged makes.
func TestLoadLedPassesOverSettledPartitions(t *testing.T) {
	open := func(p int32) *partition.Replica {
		rep, err := partition.Open(partition.Options{Dir: t.TempDir(), Topic: "t", Partition: p,
			Config: config.ResolveTopic(nil, nil), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rep.Close() })
		return rep
	}
	led, followed := open(0), open(1)
	led.SetLeadership(true, 3)
	followed.SetLeadership(false, 3)
	leaders := &localLeaders{reps: map[int32]*partition.Replica{0: led, 1: followed}} // 2: not here
	made := make(chan *recordingShard, 4)
	rt := New(Config[*recordingShard]{Topic: "t", Partitions: 3, Leaders: leaders,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		NewShard: func(p *Partition) *recordingShard {
			s := &recordingShard{part: p, release: make(chan struct{})}
			close(s.release)
			made <- s
			return s
		}})
	t.Cleanup(rt.Close)
	sweep := func(wantLookups int64) {
		t.Helper()
		before := leaders.lookups.Load()
		rt.LoadLed()
		if got := leaders.lookups.Load() - before; got != wantLookups {
			t.Fatalf("LoadLed looked up %d partitions, want %d", got, wantLookups)
		}
	}

	sweep(1) // partition 0 led, no slot yet
	first := <-made
	waitShard(t, rt, first)
	sweep(0)
	sweep(0)

	led.SetLeadership(true, 4) // a new leader epoch: a new shard
	sweep(1)
	second := <-made
	if second.part.Epoch != 4 {
		t.Fatalf("new shard's epoch %d, want 4", second.part.Epoch)
	}
	waitShard(t, rt, second)
	if h := first.history(); len(h) != 3 || h[2] != "unload" {
		t.Fatalf("first shard: %v, want load, activate, unload", h)
	}
	sweep(0)

	led.SetLeadership(false, 5) // led elsewhere: its shard unloads
	sweep(1)
	if h := second.history(); len(h) != 3 || h[2] != "unload" {
		t.Fatalf("second shard: %v, want load, activate, unload", h)
	}
	if _, err := rt.Shard(0); !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("Shard without leadership: %v, want ErrNotCoordinator", err)
	}
	sweep(0)
	if len(made) != 0 {
		t.Fatalf("%d shards made for partitions not led", len(made))
	}
}
