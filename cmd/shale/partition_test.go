package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/shale-io/shale/internal/testnode"
)

// TestPartitionElectPreferred: on one node every partition is already led by
// its preferred replica, so `shale partition elect-preferred` reports each as
// already preferred and exits 0, for named topics and for all; an unknown
// topic exits 1 with UNKNOWN_TOPIC_OR_PARTITION. The move itself is
// TestPreferredElectionVerb's (internal/membershiptest, three processes).
func TestPartitionElectPreferred(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	var out, errb bytes.Buffer
	sh := func(args ...string) int {
		out.Reset()
		errb.Reset()
		return run(append(args, "--bootstrap", n.KafkaAddr()), &out, &errb)
	}
	if code := sh("topic", "create", "ep", "-p", "2"); code != 0 {
		t.Fatalf("topic create: exit %d: %s", code, errb.String())
	}
	if code := sh("partition", "elect-preferred", "ep"); code != 0 {
		t.Fatalf("elect-preferred ep: exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "TOPIC") || !strings.HasSuffix(lines[1], "already preferred") || !strings.HasSuffix(lines[2], "already preferred") {
		t.Fatalf("elect-preferred ep:\n%s", out.String())
	}
	if code := sh("partition", "elect-preferred", "--output", "json"); code != 0 {
		t.Fatalf("elect-preferred (all): exit %d: %s", code, errb.String())
	}
	var res []electionOut
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("json: %v: %s", err, out.String())
	}
	ep := 0
	for _, r := range res {
		if r.Error || r.Result != "already preferred" {
			t.Errorf("all topics: %+v", r)
		}
		if r.Topic == "ep" {
			ep++
		}
	}
	if ep != 2 {
		t.Fatalf("all topics listed %d partitions of ep, want 2: %+v", ep, res)
	}
	if code := sh("partition", "elect-preferred", "nope"); code != 1 || !strings.Contains(errb.String(), "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("unknown topic: exit %d, %q", code, errb.String())
	}
}
