package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseReassignment(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}`, ""},
		{`{"version":2,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}`, "version 2"},
		{`{"version":1,"partitions":[]}`, "no partition"},
		{`{"version":1,"partitions":[{"topic":"","partition":0,"replicas":[1]}]}`, "want a topic"},
		{`{"version":1,"partitions":[{"topic":"t","partition":-1,"replicas":[1]}]}`, "want a topic"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[]}]}`, "empty replica list"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}`, "listed twice"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}`, "t-0 listed twice"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["/data"]}]}`, "give \"any\""},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}`, "1 log dirs for 2 replicas"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"extra":1}]}`, "not a reassignment JSON file"},
		{`[1,2]`, "not a reassignment JSON file"},
	} {
		_, err := parseReassignment(strings.NewReader(c.body))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.body, err)
		case c.want != "" && (!errors.Is(err, errBadReassignment) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an errBadReassignment with %q", c.body, err, c.want)
		}
	}
}

// FuzzParseReassignment: any bytes give a checked file or an
// errBadReassignment, never a panic; a file accepted has no partition
// twice and no broker twice in a list.
func FuzzParseReassignment(f *testing.F) {
	f.Add([]byte(`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}`))
	f.Add([]byte(`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}`))
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`nul`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rf, err := parseReassignment(strings.NewReader(string(b)))
		if err != nil {
			if !errors.Is(err, errBadReassignment) {
				t.Fatalf("error %v is not an errBadReassignment", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, p := range rf.Partitions {
			k := fmt.Sprintf("%s-%d", p.Topic, p.Partition)
			if seen[k] || len(p.Replicas) == 0 || len(slices.Compact(slices.Sorted(slices.Values(p.Replicas)))) != len(p.Replicas) {
				t.Fatalf("accepted %s: %+v", b, rf)
			}
			seen[k] = true
		}
	})
}
