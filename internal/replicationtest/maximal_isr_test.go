package replicationtest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
)

// TestISRExpansionCountsAtOnce is issue 15 item 3 (Kafka's maximal ISR): a
// follower that rejoins the ISR counts in the leader's high watermark from
// the moment the leader proposes it, because from the moment the change
// commits the control plane may elect it. Every node delays its reconciles
// by 4 s (the SHALE_TEST_RECONCILE_DELAY hook), which is how long the
// leader used to keep computing its high watermark over the old ISR after
// committing the expansion. The follower is stopped (SIGSTOP) as soon as
// the control plane shows it back in the ISR, acks=all writes go to the
// leader, and then the leader and the other follower are killed: the
// stopped follower, resumed, is the only live ISR member and leads. Every
// write that was acknowledged must be in its log. Before the fix the
// leader acknowledged them with the old ISR, and they were lost.
func TestISRExpansionCountsAtOnce(t *testing.T) {
	// A 10 s broker session and replica.lag.time.max: the stopped follower
	// stays registered and in the ISR for the few seconds the test needs.
	c := startClusterEnv(t, "maxisr", 1, []string{"SHALE_TEST_RECONCILE_DELAY=4s"},
		"--replica-lag-time-max", "10s", "--broker-session-timeout", "10s")
	ctx := proctest.Context(t, 5*time.Minute)
	leaderID, epoch := c.leaderOf(0, 60*time.Second)
	leader := c.node(leaderID)
	f := c.node(leaderID%3 + 1)
	other := c.node(6 - leaderID - f.id)
	// The followers open their replicas a reconcile (4 s) late.
	if err := proctest.WaitFor(60*time.Second, func() bool {
		return f.TookRole("became follower", c.topic, 0, epoch) && other.TookRole("became follower", c.topic, 0, epoch)
	}); err != nil {
		t.Fatal("the followers did not open their replicas")
	}
	b, err := leader.seed()
	if err != nil {
		t.Fatal(err)
	}
	const before = 50
	for i := range before {
		if code, off, err := rawProduce(ctx, b, c.topic, 0, -1, fmt.Sprintf("c-%d", i)); err != nil || code != 0 || off != int64(i) {
			t.Fatalf("acks=all record %d: code %d offset %d (%v)", i, code, off, err)
		}
	}

	f.Kill()
	without := []int32{leaderID, other.id}
	slices.Sort(without)
	if err := proctest.WaitFor(30*time.Second, func() bool {
		pv, err := leader.Partition(ctx, c.topic, 0)
		return err == nil && slices.Equal(pv.ISR, without)
	}); err != nil {
		t.Fatalf("the ISR did not shrink to %v", without)
	}
	f.Start()
	f.WaitReady()
	// Stop the follower the moment the leader's control plane shows it
	// back in the ISR.
	if err := proctest.Poll(60*time.Second, 5*time.Millisecond, func() bool {
		pv, err := leader.Partition(ctx, c.topic, 0)
		return err == nil && slices.Contains(pv.ISR, f.id)
	}); err != nil {
		t.Fatalf("node %d did not rejoin the ISR", f.id)
	}
	f.Pause()

	// acks=all writes, each with a 2 s produce timeout, all at once, each
	// on its own connection (a connection's requests are answered in
	// order).
	const writes = 5
	var mu sync.Mutex
	acked := map[int64]string{}
	var codes []int16
	var wg sync.WaitGroup
	for i := range writes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := fmt.Sprintf("m-%d", i)
			cl, err := kgo.NewClient(kgo.SeedBrokers(leader.Kafka()))
			if err != nil {
				return
			}
			defer cl.Close()
			code, off, err := rawProduce(ctx, cl.SeedBrokers()[0], c.topic, 0, -1, v)
			mu.Lock()
			defer mu.Unlock()
			codes = append(codes, code)
			if err == nil && code == 0 {
				acked[off] = v
			}
		}()
	}
	wg.Wait()
	t.Logf("with node %d stopped just after it rejoined the ISR: %d of %d acks=all writes acknowledged (codes %v)",
		f.id, len(acked), writes, codes)

	leader.Kill()
	other.Kill()
	f.Resume()
	if l, _ := c.leaderOf(0, 90*time.Second); l != f.id {
		t.Fatalf("node %d leads, want node %d, the only live ISR member", l, f.id)
	}
	// Another replica back, so that the high watermark can move to the
	// new leader's log end.
	other.Start()
	other.WaitReady()
	var hw int64
	if err := proctest.WaitFor(60*time.Second, func() bool {
		pv, err := f.Partition(ctx, c.topic, 0)
		if err != nil || !slices.Contains(pv.ISR, other.id) {
			return false
		}
		hw, err = listOffsetOn(ctx, f, c.topic, 0, -1)
		return err == nil && hw >= before
	}); err != nil {
		t.Fatalf("node %d did not rejoin the ISR of node %d", other.id, f.id)
	}
	vals, err := readValues(ctx, f, c.topic, 0, 0, hw)
	if err != nil {
		t.Fatal(err)
	}
	for i := range before {
		if want := fmt.Sprintf("c-%d", i); vals[int64(i)] != want {
			t.Fatalf("offset %d holds %q, want %q", i, vals[int64(i)], want)
		}
	}
	for off, v := range acked {
		if vals[off] != v {
			t.Errorf("acknowledged %q at offset %d is lost: the new leader has %q there (high watermark %d)", v, off, vals[off], hw)
		}
	}
	proctest.CheckEpochs(t, c.Nodes())
	c.CheckNoPanic()
}
