package clustertest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/infra/natsembed"
	"github.com/shale-io/shale/internal/proctest"
)

// TestNATSClusterHeal runs three shale processes on a 3-node NATS cluster
// (in this process, control-plane buckets replicated 3 ways), then shuts
// down the JetStream meta leader among the NATS servers and kills -9 the
// shale controller at the same moment. Within a bound the two surviving
// nodes must agree on a new controller (one of them logging "became
// controller"), give every partition of an RF=3 topic a live leader, and
// serve a franz-go producer and consumer. `shale cluster status` names the
// nodes and the controller before and after.
func TestNATSClusterHeal(t *testing.T) {
	const (
		topic = "heal"
		parts = 6
		nrecs = 200
		// healBound: NATS re-elects its meta and stream leaders, the lease
		// (2 s) and the dead broker's session (2 s) expire.
		healBound = 45 * time.Second
	)
	dir := t.TempDir()
	servers, err := natsembed.StartCluster(3, filepath.Join(dir, "nats"), natsembed.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range servers {
			s.Shutdown()
		}
	})
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = s.ClientURL()
	}
	nodes := startNodesInTurn(t, dir, strings.Join(urls, ","), 3, "--nats-replicas", "3")
	ctx := proctest.Context(t, 3*time.Minute)

	createInStep(ctx, t, nodes, 30*time.Second, topic, parts, nil)
	before, err := viewFrom(ctx, nodes[0], topic, parts)
	if err != nil {
		t.Fatal(err)
	}
	checkStatus(t, nodes[0].Kafka(), []int32{1, 2, 3}, before.Controller, topic, parts)

	var natsVictim *natsembed.Server
	for _, s := range servers {
		if s.JetStreamIsLeader() {
			natsVictim = s
		}
	}
	if natsVictim == nil {
		t.Fatal("no JetStream meta leader among the NATS servers")
	}
	victim := nodes[before.Controller-1]
	var survivors []*node
	becameBefore := map[int32]int{}
	for _, n := range nodes {
		if n != victim {
			survivors = append(survivors, n)
			becameBefore[n.id] = n.CountLines("became controller")
		}
	}
	t.Logf("shutting down NATS %s (meta leader) and killing controller node %d", natsVictim.Name(), victim.id)
	begin := time.Now()
	natsVictim.Shutdown()
	victim.Kill()

	// Broker lists are not compared here: a survivor whose NATS server
	// went down can miss the dead broker's expiry for good (reported to the
	// lead with a deterministic reproduction).
	waitHealed(ctx, t, nodes, topic, parts, healBound, false)
	took := time.Since(begin)
	after, err := viewFrom(ctx, survivors[0], topic, parts)
	if err != nil {
		t.Fatal(err)
	}
	newCtrl := nodes[after.Controller-1]
	if newCtrl == victim || newCtrl.CountLines("became controller") <= becameBefore[newCtrl.id] {
		t.Fatalf("controller %d after the kill did not log becoming controller", after.Controller)
	}
	for p, pd := range before.Partitions {
		if pd.Leader == victim.id && after.Partitions[p].Epoch <= pd.Epoch {
			t.Fatalf("partition %d left node %d without a new epoch: %d -> %d", p, victim.id, pd.Epoch, after.Partitions[p].Epoch)
		}
	}
	t.Logf("healed in %v: controller %d", took.Round(time.Millisecond), after.Controller)
	// Ask the new controller: it re-elected the dead node's partitions, so
	// its cache has seen that node expire.
	want := []int32{survivors[0].id, survivors[1].id}
	checkStatus(t, newCtrl.Kafka(), want, after.Controller, topic, parts)

	// Produce and consume through the survivors.
	seeds := kgo.SeedBrokers(survivors[0].Kafka(), survivors[1].Kafka())
	// RecordDeliveryTimeout bounds the produce: an idempotent producer
	// otherwise retries for ever, and ProduceSync ignores ctx once buffered.
	prod, err := kgo.NewClient(seeds, kgo.DefaultProduceTopic(topic), kgo.ProduceRequestTimeout(10*time.Second),
		kgo.RecordDeliveryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	sent := map[string]bool{}
	var recs []*kgo.Record
	for i := range nrecs {
		v := fmt.Sprintf("heal-%03d", i)
		sent[v] = true
		recs = append(recs, &kgo.Record{Key: []byte(v), Value: []byte(v)})
	}
	// Wait for the promises against a deadline of our own: a record in
	// flight to a broker that never answers would hold ProduceSync for ever.
	results := make(chan error, len(recs))
	for _, r := range recs {
		prod.Produce(ctx, r, func(_ *kgo.Record, err error) { results <- err })
	}
	produceDeadline := time.After(60 * time.Second)
	for answered := range len(recs) {
		select {
		case err := <-results:
			if err != nil {
				t.Fatalf("produce through the survivors: %v", err)
			}
		case <-produceDeadline:
			t.Fatalf("produce through the survivors: %d records unanswered after 60s", len(recs)-answered)
		}
	}
	cons, err := kgo.NewClient(seeds, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := map[string]bool{}
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < nrecs && time.Now().Before(deadline) {
		fctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cons.PollFetches(fctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			if !sent[string(r.Value)] {
				t.Errorf("consumed a record never produced: %q", r.Value)
			}
			got[string(r.Value)] = true
		})
	}
	if len(got) != nrecs {
		t.Fatalf("consumed %d of %d produced records", len(got), nrecs)
	}

	checkEpochs(t, nodes)
	for _, n := range nodes {
		n.CheckNoPanic()
	}
}
