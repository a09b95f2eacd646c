package replicationtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shale-io/shale/internal/proctest"
)

// parseLogfmt reads one slog text line (shared with the other process tests).
var parseLogfmt = proctest.ParseLogfmt

// tookRole reports whether n's stderr (any run) has a line with message
// msg ("became leader" or "became follower") for topic-partition in epoch.
func tookRole(n *node, msg, topic string, partition, epoch int32) bool {
	for _, line := range strings.Split(n.stderr.String(), "\n") {
		if !strings.Contains(line, `msg="`+msg+`"`) {
			continue
		}
		kv := parseLogfmt(line)
		if kv["msg"] == msg && kv["topic"] == topic && kv["partition"] == fmt.Sprint(partition) && kv["leader_epoch"] == fmt.Sprint(epoch) {
			return true
		}
	}
	return false
}

// checkEpochs fails the test if two nodes ever logged becoming leader of
// one partition in the same leader epoch. It returns how many such lines
// it read; a "became leader" line it cannot parse is a failure.
func checkEpochs(t *testing.T, nodes []*node) int {
	t.Helper()
	type key struct {
		topic            string
		partition, epoch string
	}
	by := map[key]string{}
	count := 0
	for _, n := range nodes {
		for _, line := range strings.Split(n.stderr.String(), "\n") {
			if !strings.Contains(line, `msg="became leader"`) {
				continue
			}
			kv := parseLogfmt(line)
			if kv["topic"] == "" || kv["partition"] == "" || kv["leader_epoch"] == "" || kv["node"] == "" {
				t.Fatalf("node %d: unparsable line: %s", n.id, line)
			}
			count++
			k := key{kv["topic"], kv["partition"], kv["leader_epoch"]}
			if prev, ok := by[k]; ok && prev != kv["node"] {
				t.Fatalf("%s-%s epoch %s led by nodes %s and %s", k.topic, k.partition, k.epoch, prev, kv["node"])
			}
			by[k] = kv["node"]
		}
	}
	return count
}
