package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestBalancerVerbs runs the balancer's verbs on three in-process nodes:
// a drain that cannot finish is refused with its reason and nothing
// changes; one that can empties the broker (--wait) and recommission
// ends it; bad reassignment files (unknown broker, a broker twice, a
// partition twice, an unknown partition) are refused before anything is
// sent; a reassignment onto a stopped broker stays in progress, so that a
// second plan for it (`partition reassign` again, `cluster rebalance`) is
// refused as conflicting, and --cancel reverts it.
func TestBalancerVerbs(t *testing.T) {
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 3)
	boot, admin := nodes[0].KafkaAddr(), nodes[0].AdminAddr()
	var out, errb bytes.Buffer
	sh := func(args ...string) int {
		out.Reset()
		errb.Reset()
		return run(append(args, "--bootstrap", boot), &out, &errb)
	}
	shA := func(args ...string) int {
		out.Reset()
		errb.Reset()
		return run(append(args, "--admin", admin), &out, &errb)
	}
	cl := testnode.Client(t, boot)
	adm := kadm.NewClient(cl)
	replicasOf := func(topic string) map[int32][]int32 {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		td, err := adm.ListTopics(ctx, topic)
		if err != nil || td[topic].Err != nil {
			t.Fatalf("metadata of %s: %v %v", topic, err, td[topic].Err)
		}
		out := map[int32][]int32{}
		for p, pd := range td[topic].Partitions {
			out[p] = pd.Replicas
		}
		return out
	}
	if code := sh("topic", "create", "full", "-p", "2", "-r", "3"); code != 0 {
		t.Fatalf("topic create: exit %d: %s", code, errb.String())
	}
	if code := sh("topic", "create", "half", "-p", "3", "-r", "2"); code != 0 {
		t.Fatalf("topic create: exit %d: %s", code, errb.String())
	}

	// RF 3 on three brokers: draining one cannot finish.
	if code := shA("broker", "decommission", "3"); code != 1 || !strings.Contains(errb.String(), "decommission refused") ||
		!strings.Contains(errb.String(), "full-") || !strings.Contains(errb.String(), "only 2 brokers would be left") {
		t.Fatalf("decommission 3 with RF 3 on three brokers: exit %d: %q", code, errb.String())
	}
	if code := shA("broker", "decommission", "9"); code != 1 || !strings.Contains(errb.String(), "not registered") {
		t.Fatalf("decommission of an unknown broker: exit %d: %q", code, errb.String())
	}
	if code := shA("broker", "decommission", "x"); code != 2 {
		t.Fatalf("decommission x: exit %d: %q", code, errb.String())
	}
	if code := run([]string{"cluster", "rebalance", "--dry-run", "--admin", admin, "--output", "json"}, &out, &errb); code != 0 {
		t.Fatalf("rebalance --dry-run: exit %d: %s", code, errb.String())
	}
	var plan adminapi.BalancePlan
	if err := json.Unmarshal(out.Bytes(), &plan); err != nil || len(plan.Draining) != 0 || len(plan.Brokers) != 3 {
		t.Fatalf("plan after refused drains: %v %+v", err, plan)
	}

	// A file with a problem moves nothing.
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	before := replicasOf("half")
	for _, c := range []struct{ name, body, want string }{
		{"unknown broker", `{"version":1,"partitions":[{"topic":"half","partition":0,"replicas":[1,2]},{"topic":"half","partition":1,"replicas":[1,9]}]}`, "broker 9 is not registered"},
		{"broker twice", `{"version":1,"partitions":[{"topic":"half","partition":0,"replicas":[2,2]}]}`, "listed twice"},
		{"partition twice", `{"version":1,"partitions":[{"topic":"half","partition":0,"replicas":[1,2]},{"topic":"half","partition":0,"replicas":[2,3]}]}`, "half-0 listed twice"},
		{"unknown partition", `{"version":1,"partitions":[{"topic":"half","partition":0,"replicas":[2,3]},{"topic":"half","partition":7,"replicas":[1,2]}]}`, "no partition 7"},
		{"not the format", `{"partitions":[{"topic":"half","partition":0,"replicas":[2,3]}]}`, "version 0"},
	} {
		if code := sh("partition", "reassign", "--reassignment-json-file", write("bad.json", c.body)); code != 1 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%s: exit %d: %q, want exit 1 and %q", c.name, code, errb.String(), c.want)
		}
	}
	if after := replicasOf("half"); !mapsEqual(before, after) {
		t.Fatalf("refused files moved replicas: %v -> %v", before, after)
	}

	// A drain that can finish once "full" (RF 3) is gone: "half" (RF 2)
	// leaves broker 3, and a move onto it is refused meanwhile.
	if code := sh("topic", "delete", "full"); code != 0 {
		t.Fatalf("topic delete: exit %d: %s", code, errb.String())
	}
	if code := shA("broker", "decommission", "3", "--wait", "--wait-timeout", "60s"); code != 0 || !strings.Contains(out.String(), "drained in") {
		t.Fatalf("decommission 3 --wait: exit %d: %s %s", code, out.String(), errb.String())
	}
	// --wait read the node it asked; the node answering Metadata may see
	// the last completions a moment later.
	var left string
	if err := proctest.WaitFor(10*time.Second, func() bool {
		left = ""
		for p, r := range replicasOf("half") {
			if slices.Contains(r, 3) || len(r) != 2 {
				left += fmt.Sprintf(" half-%d: replicas %v", p, r)
			}
		}
		return left == ""
	}); err != nil {
		t.Fatalf("after the drain:%s", left)
	}
	onto := write("onto.json", `{"version":1,"partitions":[{"topic":"half","partition":0,"replicas":[3,1]}]}`)
	if code := sh("partition", "reassign", "--reassignment-json-file", onto); code != 1 || !strings.Contains(out.String(), "being decommissioned") {
		t.Fatalf("reassign onto a draining broker: exit %d: %s %s", code, out.String(), errb.String())
	}
	if code := shA("broker", "recommission", "3"); code != 0 || !strings.Contains(out.String(), "draining: []") {
		t.Fatalf("recommission 3: exit %d: %s %s", code, out.String(), errb.String())
	}

	// Broker 3 stops (fenced): a move onto it stays in progress.
	if err := nodes[2].Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code := sh("topic", "create", "mv", "-p", "1", "-r", "1"); code != 0 {
		t.Fatalf("topic create: exit %d: %s", code, errb.String())
	}
	cur := replicasOf("mv")[0]
	move := write("move.json", `{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[3],"log_dirs":["any"]}]}`)
	if code := sh("partition", "reassign", "--reassignment-json-file", move); code != 0 || !strings.Contains(out.String(), "started") ||
		!strings.Contains(out.String(), `"replicas":`+jsonInts(cur)) {
		t.Fatalf("reassign mv-0 to 3: exit %d: %s %s", code, out.String(), errb.String())
	}
	if code := sh("partition", "reassign", "--reassignment-json-file", move, "--verify"); code != 1 || !strings.Contains(out.String(), "in progress") {
		t.Fatalf("verify: exit %d: %s %s", code, out.String(), errb.String())
	}
	other := write("other.json", `{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[1,2]}]}`)
	if code := sh("partition", "reassign", "--reassignment-json-file", other); code != 1 || !strings.Contains(errb.String(), "being reassigned already") {
		t.Fatalf("a second plan for mv-0: exit %d: %q", code, errb.String())
	}
	if code := run([]string{"cluster", "rebalance", "--admin", admin, "--bootstrap", boot}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "reassignments in progress") {
		t.Fatalf("rebalance while a move runs: exit %d: %q", code, errb.String())
	}
	if code := sh("partition", "reassign", "--reassignment-json-file", move, "--cancel"); code != 0 || !strings.Contains(out.String(), "cancelled") {
		t.Fatalf("cancel: exit %d: %s %s", code, out.String(), errb.String())
	}
	var r []int32
	if err := proctest.WaitFor(10*time.Second, func() bool {
		r = replicasOf("mv")[0]
		return slices.Equal(r, cur)
	}); err != nil {
		t.Fatalf("mv-0 after cancel: %v, want %v", r, cur)
	}

	if code := sh("partition", "elect-leaders", "--preferred", "--unclean"); code != 2 {
		t.Fatalf("both election types: exit %d: %q", code, errb.String())
	}
	if code := sh("partition", "elect-leaders", "--preferred", "half"); code != 0 {
		t.Fatalf("elect-leaders --preferred: exit %d: %s", code, errb.String())
	}
}

func mapsEqual(a, b map[int32][]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func jsonInts(v []int32) string {
	b, _ := json.Marshal(v)
	return string(b)
}
