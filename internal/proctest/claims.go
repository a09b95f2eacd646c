package proctest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// LeadClaim says that Node led Topic-Partition in leader epoch Epoch.
type LeadClaim struct {
	Node      int32
	Topic     string
	Partition int32
	Epoch     int32
}

// LeadClaims returns the claims made by the slog text lines of log whose
// msg is msg, with the claiming node taken from the attribute nodeAttr
// ("node" for a replica's "became leader", "leader" for a controller's
// "elected leader") and the partition from "topic", "partition" and
// "leader_epoch". A matching line without a parsable claim is an error: the
// log format changed, and a check would otherwise pass on nothing.
func LeadClaims(log, msg, nodeAttr string) ([]LeadClaim, error) {
	var out []LeadClaim
	for _, kv := range logLines(log, msg) {
		node, err1 := strconv.ParseInt(kv[nodeAttr], 10, 32)
		part, err2 := strconv.ParseInt(kv["partition"], 10, 32)
		epoch, err3 := strconv.ParseInt(kv["leader_epoch"], 10, 32)
		if err1 != nil || err2 != nil || err3 != nil || kv["topic"] == "" {
			return nil, fmt.Errorf("unparsable %q line: %v", msg, kv)
		}
		out = append(out, LeadClaim{Node: int32(node), Topic: kv["topic"], Partition: int32(part), Epoch: int32(epoch)})
	}
	return out, nil
}

// EpochConflicts describes every (topic, partition, leader epoch) claimed by
// more than one node, sorted: two leaders in one epoch.
func EpochConflicts(cs []LeadClaim) []string {
	type key struct {
		topic     string
		partition int32
		epoch     int32
	}
	by := map[key][]int32{}
	for _, c := range cs {
		k := key{c.Topic, c.Partition, c.Epoch}
		if !slices.Contains(by[k], c.Node) {
			by[k] = append(by[k], c.Node)
		}
	}
	var out []string
	for k, nodes := range by {
		if len(nodes) > 1 {
			slices.Sort(nodes)
			out = append(out, fmt.Sprintf("%s-%d epoch %d led by nodes %v", k.topic, k.partition, k.epoch, nodes))
		}
	}
	slices.Sort(out)
	return out
}

// CheckEpochs fails the test if two nodes ever logged becoming leader of
// one partition in the same leader epoch, if a node logged a claim as
// another node, or if two controllers elected different leaders for one
// partition and epoch, reading every run's output of nodes (by id). It
// returns how many "became leader" lines it read; a claim it cannot parse
// is a failure.
func CheckEpochs(t testing.TB, nodes map[int32]*Node) int {
	t.Helper()
	var became, elected []LeadClaim
	for id, n := range nodes {
		log := n.Output()
		cs, err := LeadClaims(log, "became leader", "node")
		if err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
		for _, c := range cs {
			if c.Node != id {
				t.Fatalf("node %d logged a leader claim as node %d", id, c.Node)
			}
		}
		became = append(became, cs...)
		es, err := LeadClaims(log, "elected leader", "leader")
		if err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
		elected = append(elected, es...)
	}
	if bad := EpochConflicts(became); len(bad) > 0 {
		t.Fatalf("two nodes led one partition in the same epoch:\n%s", strings.Join(bad, "\n"))
	}
	if bad := EpochConflicts(elected); len(bad) > 0 {
		t.Fatalf("controllers elected different leaders for one partition and epoch:\n%s", strings.Join(bad, "\n"))
	}
	return len(became)
}
