package clustertest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// parseLogfmt splits one line of slog's text format into its key=value
// pairs. Quoted values are unquoted; a malformed quoted value is kept raw.
func parseLogfmt(line string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(line); {
		for i < len(line) && line[i] == ' ' {
			i++
		}
		eq := strings.IndexByte(line[i:], '=')
		if eq < 0 {
			break
		}
		key := line[i : i+eq]
		i += eq + 1
		var val string
		if i < len(line) && line[i] == '"' {
			j := i + 1
			for j < len(line) && line[j] != '"' {
				if line[j] == '\\' {
					j++
				}
				j++
			}
			raw := line[i:min(j+1, len(line))]
			if u, err := strconv.Unquote(raw); err == nil {
				val = u
			} else {
				val = raw
			}
			i = j + 1
		} else {
			j := strings.IndexByte(line[i:], ' ')
			if j < 0 {
				j = len(line) - i
			}
			val = line[i : i+j]
			i += j
		}
		if key != "" && !strings.ContainsRune(key, ' ') {
			out[key] = val
		}
	}
	return out
}

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
