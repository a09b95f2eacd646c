package membershiptest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
)

// TestUnregisterBroker is the operator's way to forget a decommissioned
// broker, through the `shale broker` verbs (the SDK over Kafka's
// DescribeCluster v2 and UnregisterBroker). A live broker is not
// unregistered (INVALID_REQUEST); stopped, it is listed as fenced and may
// still be given a new partition's replica beside a live one; unregistered,
// it is no longer listed, placing a replica on it is
// INVALID_REPLICA_ASSIGNMENT and unregistering it again
// BROKER_ID_NOT_REGISTERED. Started again with the same id, it registers
// anew and takes a reassignment.
func TestUnregisterBroker(t *testing.T) {
	c := startCluster(t, 1, 2, 3, 4)
	c.createTopic("stay", 1, 3, map[string]string{"min.insync.replicas": "2"})
	old := c.WaitPartition("stay", 0, 30*time.Second, func(pv proctest.Partition) bool { return len(pv.ISR) == 3 }).Order
	if slices.Contains(old, 4) {
		// The placement is random: make the topic's replicas 1,2,3.
		old = []int32{1, 2, 3}
		if err := c.reassign("stay", old); err != nil {
			t.Fatal(err)
		}
		c.waitMoved("stay", []int32{1, 2, 3, 4}, old)
	}
	offsets := c.produce("stay", 0, 200)

	if out, code := c.cli("broker", "unregister", "4"); code != 1 || !strings.Contains(out, "INVALID_REQUEST") {
		t.Fatalf("unregistering live node 4: exit %d, %q; want 1 and INVALID_REQUEST", code, out)
	}
	c.nodes[4].Stop(30 * time.Second)
	c.waitBrokers(1, 2, 3)
	if got := c.brokerList(); !slices.Equal(got, []string{"1 live", "2 live", "3 live", "4 fenced"}) {
		t.Fatalf("shale broker list with node 4 stopped: %v", got)
	}
	// Without IncludeFencedBrokers, DescribeCluster lists the live brokers
	// only, as Kafka's does (and Metadata: waitBrokers above).
	dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(proctest.Context(t, 10*time.Second), c.client())
	if err != nil {
		t.Fatal(err)
	}
	var listed []int32
	for _, b := range dc.Brokers {
		listed = append(listed, b.NodeID)
	}
	if slices.Sort(listed); !slices.Equal(listed, []int32{1, 2, 3}) {
		t.Fatalf("DescribeCluster v%d without IncludeFencedBrokers lists %v, want [1 2 3]", dc.Version, listed)
	}
	if err := c.createAssigned("beside-fenced", [][]int32{{4, 1}}, -1, -1); err != nil {
		t.Fatalf("a partition on fenced 4 and live 1: %v", err)
	}
	pv := c.WaitPartition("beside-fenced", 0, 30*time.Second, func(pv proctest.Partition) bool { return pv.Leader == 1 })
	if !slices.Equal(pv.ISR, []int32{1}) {
		t.Fatalf("beside-fenced-0: %v; want node 1 alone in the ISR", pv)
	}

	if out, code := c.cli("broker", "unregister", "4"); code != 0 {
		t.Fatalf("unregistering stopped node 4: exit %d, %q", code, out)
	}
	if got := c.brokerList(); !slices.Equal(got, []string{"1 live", "2 live", "3 live"}) {
		t.Fatalf("shale broker list after unregistering node 4: %v", got)
	}
	if err := c.reassign("stay", []int32{4, 1, 2}); !errors.Is(err, kerr.InvalidReplicaAssignment) {
		t.Fatalf("reassigning onto unregistered node 4: %v, want INVALID_REPLICA_ASSIGNMENT", err)
	}
	if err := c.createAssigned("on-unregistered", [][]int32{{4, 1}}, -1, -1); !errors.Is(err, kerr.InvalidReplicaAssignment) {
		t.Fatalf("a partition on unregistered node 4: %v, want INVALID_REPLICA_ASSIGNMENT", err)
	}
	if out, code := c.cli("broker", "unregister", "4"); code != 1 || !strings.Contains(out, "BROKER_ID_NOT_REGISTERED") {
		t.Fatalf("unregistering node 4 twice: exit %d, %q; want 1 and BROKER_ID_NOT_REGISTERED", code, out)
	}

	c.Start(4)
	if got := c.brokerList(); !slices.Equal(got, []string{"1 live", "2 live", "3 live", "4 live"}) {
		t.Fatalf("shale broker list with node 4 back: %v", got)
	}
	target := []int32{4, old[1], old[2]}
	if err := c.reassign("stay", target); err != nil {
		t.Fatalf("reassigning onto node 4 registered again: %v", err)
	}
	c.waitMoved("stay", old, target)
	c.checkRecords("stay", 0, offsets)
	c.CheckNoPanic()
}

// cli runs the shale binary's client verb args against the live nodes and
// returns its combined output and exit code.
func (c *cluster) cli(args ...string) (string, int) {
	c.t.Helper()
	var seeds []string
	for _, id := range c.LiveIDs() {
		seeds = append(seeds, c.nodes[id].Kafka())
	}
	ctx := proctest.Context(c.t, 30*time.Second)
	cmd := exec.CommandContext(ctx, shaleBin, append(args, "--bootstrap", strings.Join(seeds, ","))...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	c.t.Fatalf("shale %v: %v", args, err)
	return "", -1
}

// brokerList returns `shale broker list --output json` as "ID live" or
// "ID fenced" per broker.
func (c *cluster) brokerList() []string {
	c.t.Helper()
	out, code := c.cli("broker", "list", "--output", "json")
	if code != 0 {
		c.t.Fatalf("shale broker list: exit %d: %s", code, out)
	}
	var brokers []struct {
		NodeID int32 `json:"node_id"`
		Fenced bool  `json:"fenced"`
	}
	if err := json.Unmarshal([]byte(out), &brokers); err != nil {
		c.t.Fatalf("shale broker list: %v: %s", err, out)
	}
	var got []string
	for _, b := range brokers {
		state := "live"
		if b.Fenced {
			state = "fenced"
		}
		got = append(got, fmt.Sprintf("%d %s", b.NodeID, state))
	}
	return got
}
