package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestGroupDescribeMissing: describing a group the cluster does not know
// exits 1 naming it on stderr (it printed STATE Dead and exited 0), after
// printing the groups that do exist.
func TestGroupDescribeMissing(t *testing.T) {
	addr := startCLINode(t)
	with := func(args ...string) []string { return append(args, "--bootstrap", addr) }
	cliOK(t, with("topic", "create", "jobs", "-p", "1")...)
	cliOK(t, with("produce", "jobs", "testdata/input_p0.txt")...)
	cliOK(t, with("consume", "jobs", "--group", "real", "--until", "end")...)

	out, errOut, code := cliRun(t, with("group", "describe", "nosuch")...)
	if code != 1 || !strings.Contains(errOut, "no such consumer group: nosuch") || strings.Contains(out, "Dead") {
		t.Fatalf("describe of a missing group: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	out, errOut, code = cliRun(t, with("group", "describe", "real", "nosuch", "--output", "json")...)
	var d []groupDescription
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if code != 1 || len(d) != 1 || d[0].Group != "real" || !strings.Contains(errOut, "nosuch") {
		t.Fatalf("describe of a real and a missing group: exit %d %+v\nstderr:\n%s", code, d, errOut)
	}
}
