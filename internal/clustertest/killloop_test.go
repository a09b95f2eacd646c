package clustertest

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/shale-io/shale/infra/natsembed"
	"github.com/shale-io/shale/internal/proctest"
)

// TestKillLoopFailover runs three shale processes on one NATS server (in
// this process) and kills -9, eight times (twenty with proctest.LongEnv), alternately the controller and
// a partition leader of a 6-partition, RF=3 topic. After each kill it
// measures, from the SIGKILL, the time until a surviving node's Metadata
// shows a live controller and a live leader (with a newer epoch where the
// leader moved) for every partition, checks that each such leader logged
// "became leader" in that epoch, then restarts the killed node on the same
// data dir and ports and waits until it is registered and in step again.
// At the end it checks from every run's stderr that no two nodes ever led a
// partition in the same leader epoch, and logs p50 and p99 of the failover
// times.
//
// The topic enables unclean.leader.election.enable, so that the loop
// measures failover and not replication: a restarted node rejoins the ISR
// once it has caught up, but the loop waits only until it is registered
// and in step, so a kill may come before it is back in the ISR, which
// under clean election would leave a partition whose only ISR member died
// offline. replicationtest's TestLeaderKillLoop is the clean-election
// loop: it kills only partition leaders, waits for every ISR to be whole
// between kills, and checks that no acknowledged write was lost.
func TestKillLoopFailover(t *testing.T) {
	const (
		topic = "ha"
		parts = 6
		// loopBudget bounds the whole loop; each round is about 2-3 s of
		// failover plus a restart.
		loopBudget = 200 * time.Second
	)
	// Eight kills in make test (four controllers, four leaders), twenty
	// with proctest.LongEnv (make chaos).
	kills := proctest.Rounds(8, 20)
	dir := t.TempDir()
	srv, err := natsembed.Start(natsembed.Config{StoreDir: filepath.Join(dir, "nats"), Port: -1, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown) // after the nodes' cleanups: those were registered later
	nodes := startNodes(t, dir, srv.ClientURL(), 3)
	ctx := proctest.Context(t, loopBudget+60*time.Second)

	unclean := "true"
	createInStep(ctx, t, nodes, 20*time.Second, topic, parts, map[string]*string{"unclean.leader.election.enable": &unclean})

	var all, ctrlKills, leaderKills []time.Duration
	loopEnd := time.Now().Add(loopBudget)
	for i := range kills {
		if time.Now().After(loopEnd) {
			t.Fatalf("kill loop over its %v budget after %d kills", loopBudget, i)
		}
		observer := nodes[i%3]
		before, err := viewFrom(ctx, observer, topic, parts)
		if err != nil {
			t.Fatal(err)
		}
		var victimID int32
		kind := "controller"
		if i%2 == 0 {
			victimID = before.Controller
		} else {
			kind = "leader"
			victimID = before.Partitions[int32(i/2%parts)].Leader
		}
		if victimID < 1 || victimID > 3 {
			t.Fatalf("kill %d: no %s to kill (id %d)", i+1, kind, victimID)
		}
		victim := nodes[victimID-1]
		if observer == victim {
			observer = nodes[int(victimID)%3]
		}

		begin := time.Now()
		victim.Kill()
		live := liveIDs(nodes)
		var last string
		var healed proctest.View
		err = proctest.WaitFor(30*time.Second, func() bool {
			v, err := viewFrom(ctx, observer, topic, parts)
			if err != nil {
				last = err.Error()
				return false
			}
			last = v.Healed(func(id int32) bool { return live[id] })
			for p, pd := range before.Partitions {
				if pd.Leader == victimID && v.Partitions[p].Epoch <= pd.Epoch {
					last += fmt.Sprintf("; partition %d epoch %d not past %d", p, v.Partitions[p].Epoch, pd.Epoch)
				}
			}
			healed = v
			return last == ""
		})
		took := time.Since(begin)
		if err != nil {
			t.Fatalf("kill %d (%s, node %d): not healed after %v, as node %d sees it: %s", i+1, kind, victimID, took, observer.id, last)
		}
		all = append(all, took)
		if kind == "controller" {
			ctrlKills = append(ctrlKills, took)
		} else {
			leaderKills = append(leaderKills, took)
		}
		t.Logf("kill %2d: %-10s node %d: healed in %v (controller now %d)", i+1, kind, victimID, took.Round(time.Millisecond), healed.Controller)

		// Each leader the metadata names has taken the role in that epoch.
		for p, pd := range healed.Partitions {
			leader := nodes[pd.Leader-1]
			if err := proctest.WaitFor(10*time.Second, func() bool { return leaderClaimed(leader, topic, p, pd.Epoch) }); err != nil {
				t.Fatalf("kill %d: metadata names node %d leader of %s-%d in epoch %d, but it never logged becoming leader",
					i+1, pd.Leader, topic, p, pd.Epoch)
			}
		}

		victim.Start()
		took = victim.WaitReady()
		waitInStep(ctx, t, nodes, topic, parts, 30*time.Second)
		t.Logf("          node %d back in %v", victimID, took.Round(time.Millisecond))
	}

	n := checkEpochs(t, nodes)
	for _, nd := range nodes {
		nd.CheckNoPanic()
	}
	t.Logf("%d kills (%d controller, %d leader); %d became-leader lines checked", len(all), len(ctrlKills), len(leaderKills), n)
	report := func(name string, xs []time.Duration) {
		t.Logf("failover %-10s p50 %v  p99 %v  max %v", name, percentile(xs, 0.5).Round(time.Millisecond),
			percentile(xs, 0.99).Round(time.Millisecond), slices.Max(xs).Round(time.Millisecond))
	}
	report("all", all)
	report("controller", ctrlKills)
	report("leader", leaderKills)
	const goal = 3 * time.Second
	if p99 := percentile(all, 0.99); p99 > goal {
		t.Logf("goal p99 <= %v NOT met: p99 %v is %v over (broker session 2s, lease 2s)", goal, p99.Round(time.Millisecond), (p99 - goal).Round(time.Millisecond))
	} else {
		t.Logf("goal p99 <= %v met", goal)
	}
}
