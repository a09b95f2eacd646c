package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
)

// statusJSON is the part of `shale cluster status --output json` the tests
// read.
type statusJSON struct {
	Controller int32 `json:"controller"`
	Brokers    []struct {
		NodeID int32 `json:"node_id"`
	} `json:"brokers"`
	Partitions []struct {
		Topic       string `json:"topic"`
		Partition   int32  `json:"partition"`
		Leader      int32  `json:"leader"`
		LeaderEpoch int32  `json:"leader_epoch"`
		Error       string `json:"error"`
	} `json:"partitions"`
}

// runStatus runs `shale cluster status --bootstrap addr` with extra flags
// and returns its stdout, failing the test on a non-zero exit.
func runStatus(t *testing.T, addr string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append([]string{"cluster", "status", "--bootstrap", addr}, extra...)
	cmd := exec.CommandContext(ctx, shaleBin, args...)
	cmd.Env = proctest.ChildEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("shale %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// checkStatus runs `shale cluster status` against addr, as JSON and as
// text, and checks that it names exactly the brokers want, the controller
// ctrl (marked in the text table), and a live leader for each of the
// topic's parts partitions.
func checkStatus(t *testing.T, addr string, want []int32, ctrl int32, topic string, parts int) {
	t.Helper()
	var st statusJSON
	raw := runStatus(t, addr, "--output", "json")
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		t.Fatalf("cluster status json: %v\n%s", err, raw)
	}
	var got []int32
	for _, b := range st.Brokers {
		got = append(got, b.NodeID)
	}
	if !slices.Equal(got, want) || st.Controller != ctrl {
		t.Fatalf("cluster status: brokers %v controller %d, want %v and %d\n%s", got, st.Controller, want, ctrl, raw)
	}
	seen := map[int32]bool{}
	for _, p := range st.Partitions {
		if p.Topic != topic {
			continue
		}
		if p.Error != "" || !slices.Contains(want, p.Leader) {
			t.Fatalf("cluster status: %s-%d leader %d error %q\n%s", topic, p.Partition, p.Leader, p.Error, raw)
		}
		seen[p.Partition] = true
	}
	if len(seen) != parts {
		t.Fatalf("cluster status: %d partitions of %s, want %d\n%s", len(seen), topic, parts, raw)
	}

	text := runStatus(t, addr)
	if !strings.Contains(text, fmt.Sprintf("controller %d\n", ctrl)) {
		t.Fatalf("cluster status text does not name controller %d:\n%s", ctrl, text)
	}
	rows := map[int32]string{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.Contains(f[1], ":") {
			continue // not a node row: those are "ID HOST:PORT [RACK] [*]"
		}
		var id int32
		if _, err := fmt.Sscan(f[0], &id); err == nil {
			rows[id] = line
		}
	}
	if len(rows) != len(want) {
		t.Fatalf("cluster status text: node rows %v, want nodes %v:\n%s", rows, want, text)
	}
	for _, id := range want {
		row, ok := rows[id]
		if !ok || strings.HasSuffix(strings.TrimSpace(row), "*") != (id == ctrl) {
			t.Fatalf("cluster status text: node %d row %q (controller %d):\n%s", id, row, ctrl, text)
		}
	}
}
