package clustertest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shale-io/shale/internal/proctest"
)

// parseLogfmt reads one slog text line (shared with the other process tests).
var parseLogfmt = proctest.ParseLogfmt

// leadClaim says that node led topic-partition in leader epoch epoch.
type leadClaim struct {
	node      int32
	topic     string
	partition int32
	epoch     int32
}

// claims returns the claims made by the lines of log whose msg is msg, with
// the claiming node taken from the attribute nodeAttr ("node" for a replica's
// "became leader", "leader" for a controller's "elected leader"). A matching
// line without a parsable claim is an error: the log format changed and the
// check would otherwise pass on nothing.
func claims(log, msg, nodeAttr string) ([]leadClaim, error) {
	var out []leadClaim
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `msg="`+msg+`"`) {
			continue
		}
		kv := parseLogfmt(line)
		if kv["msg"] != msg {
			continue
		}
		node, err1 := strconv.ParseInt(kv[nodeAttr], 10, 32)
		part, err2 := strconv.ParseInt(kv["partition"], 10, 32)
		epoch, err3 := strconv.ParseInt(kv["leader_epoch"], 10, 32)
		if err1 != nil || err2 != nil || err3 != nil || kv["topic"] == "" {
			return nil, fmt.Errorf("unparsable %q line: %s", msg, line)
		}
		out = append(out, leadClaim{node: int32(node), topic: kv["topic"], partition: int32(part), epoch: int32(epoch)})
	}
	return out, nil
}

// epochConflicts describes every (topic, partition, leader epoch) claimed by
// more than one node, sorted.
func epochConflicts(cs []leadClaim) []string {
	type key struct {
		topic     string
		partition int32
		epoch     int32
	}
	by := map[key][]int32{}
	for _, c := range cs {
		k := key{c.topic, c.partition, c.epoch}
		if !slices.Contains(by[k], c.node) {
			by[k] = append(by[k], c.node)
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

// percentile is the nearest-rank q-quantile (0 < q <= 1) of xs.
func percentile[T ~int64](xs []T, q float64) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(float64(len(s))*q+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}
