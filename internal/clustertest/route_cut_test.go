package clustertest

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/internal/proctest"
)

// TestLeaderStepsDownWhenItsNATSServerIsCut is issue 15 item 6 on real
// processes: three shale nodes, each connected to its own member of a
// 3-server NATS cluster (in this process), whose routes all go through
// proxies. The routes of the server of partition 0's leader are cut: that
// server stays up and keeps the node's connection, but it has lost its
// cluster, so the node's registration can no longer be renewed. The node
// and the two others must elect a new leader; the node must then stop
// acting as leader once its followers have moved to the new one and been
// silent for a broker session (it logs the step down and its replica turns
// follower), the two others must take acks=all writes, and once the routes are back the node
// must rejoin as a follower, with no two nodes ever leading one partition
// in the same epoch. Before 5a498fe the node stepped down only when its
// NATS connection dropped, which here it never does: it led on.
func TestLeaderStepsDownWhenItsNATSServerIsCut(t *testing.T) {
	const (
		topic   = "routecut"
		parts   = 3
		session = 2 * time.Second // newNode's --broker-session-timeout
	)
	dir := t.TempDir()
	routes := proctest.StartRoutedNATS(t, filepath.Join(dir, "nats"), quietLogger())
	servers := routes.Servers
	// Node i talks to NATS member i-1 only.
	nodes := make([]*node, 3)
	for i := range nodes {
		nodes[i] = newNode(t, dir, int32(i+1), servers[i].ClientURL(), "--nats-replicas", "3")
		nodes[i].Start()
		nodes[i].WaitReady()
	}
	ctx := proctest.Context(t, 4*time.Minute)
	two := "2"
	createInStep(ctx, t, nodes, 30*time.Second, topic, parts, map[string]*string{"min.insync.replicas": &two})
	before, err := viewFrom(ctx, nodes[0], topic, parts)
	if err != nil {
		t.Fatal(err)
	}
	victim := nodes[before.Partitions[0].Leader-1]
	member := int(victim.id - 1)
	var others []*node
	for _, n := range nodes {
		if n != victim {
			others = append(others, n)
		}
	}

	cut := time.Now()
	routes.CutMember(member)
	if err := proctest.WaitFor(10*time.Second, func() bool { return servers[member].NumRoutes() == 0 }); err != nil {
		t.Fatalf("NATS member %d keeps %d routes after the cut", member, servers[member].NumRoutes())
	}
	// The two others can elect a new leader only once their own control
	// plane answers again: when the cut member led the cluster's JetStream
	// streams, the remaining two first elect new stream leaders (NATS's Raft
	// election timeout is 4-9 s, longer under load), then the controller
	// waits out its grace. So the step down is timed from the election, and
	// the election has its own, generous bound.
	live := map[int32]bool{others[0].id: true, others[1].id: true}
	if err := proctest.WaitFor(45*time.Second, func() bool {
		v, err := viewFrom(ctx, others[0], topic, parts)
		return err == nil && live[v.Partitions[0].Leader] && v.Partitions[0].Epoch > before.Partitions[0].Epoch
	}); err != nil {
		t.Fatalf("no new leader of %s-0 among nodes %d and %d%s", topic, others[0].id, others[1].id, tails(nodes))
	}
	elected := time.Now()
	// The victim steps down once its registration has expired and the
	// followers that could replace it have been silent for a session; they
	// fall silent when they learn of the new leader through their NATS
	// watches. Bounded generously for a loaded machine; on the code before
	// the fix the node never steps down.
	if err := proctest.WaitFor(session+15*time.Second, func() bool {
		return victim.CountLines("control plane lost for longer than the broker session; stepping down") > 0
	}); err != nil {
		t.Fatalf("node %d, cut from the NATS cluster, did not step down within %v of the election of a new leader%s",
			victim.id, session+15*time.Second, tails(nodes))
	}
	t.Logf("node %d stepped down %v after its NATS server was cut, %v after the others elected a new leader (broker session %v)",
		victim.id, time.Since(cut).Round(10*time.Millisecond), time.Since(elected).Round(10*time.Millisecond), session)
	st, err := adminapi.Client{Timeout: 5 * time.Second}.ReplicationStatus(ctx, victim.Admin(), topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Partitions {
		if p.Role == "leader" {
			t.Fatalf("node %d still acts as leader of %s-%d after stepping down", victim.id, topic, p.Partition)
		}
	}

	// The others take acks=all writes.
	prod, err := kgo.NewClient(kgo.SeedBrokers(others[0].Kafka(), others[1].Kafka()), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(45*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("while cut")}).FirstErr(); err != nil {
		t.Fatalf("acks=all produce to %s-0 on the two connected nodes: %v", topic, err)
	}

	// Routes back: the node rejoins, as a follower of partition 0.
	routes.Heal()
	var last string
	if err := proctest.WaitFor(60*time.Second, func() bool {
		v, err := viewFrom(ctx, victim, topic, parts)
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("brokers %v, %s-0 %+v", v.Brokers, topic, v.Partitions[0])
		return slices.Equal(v.Brokers, []int32{1, 2, 3}) && v.Partitions[0].Leader != victim.id && len(v.Partitions[0].ISR) == 3
	}); err != nil {
		t.Fatalf("node %d did not rejoin after the routes came back: %s", victim.id, last)
	}
	if n := checkEpochs(t, nodes); n == 0 {
		t.Fatal("no leader claims read")
	}
	for _, n := range nodes {
		n.CheckNoPanic()
	}
}

// tails is every node's last output, for a failure message.
func tails(nodes []*node) string {
	var b strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&b, "\n--- node %d:\n%s", n.id, n.Tail())
	}
	return b.String()
}
