package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestGroupConfigVerb: shale group config shows a group's configs, the
// node's defaults until --set changes some (then source group), refuses a
// bad value with Kafka's error and a non-zero exit, and --delete puts a
// config back to the node's default.
func TestGroupConfigVerb(t *testing.T) {
	addr := startCLINode(t)
	with := func(args ...string) []string { return append(args, "--bootstrap", addr) }
	read := func(args ...string) map[string]groupConfigEntry {
		t.Helper()
		var es []groupConfigEntry
		out := cliOK(t, with(append([]string{"group", "config", "orders"}, append(args, "--output", "json")...)...)...)
		if err := json.Unmarshal([]byte(out), &es); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		m := map[string]groupConfigEntry{}
		for _, e := range es {
			m[e.Name] = e
		}
		return m
	}
	if m := read(); len(m) != 8 || m["consumer.session.timeout.ms"].Source != "default" || m["share.auto.offset.reset"].Value != "latest" {
		t.Fatalf("defaults: %+v", m)
	}
	m := read("--set", "consumer.session.timeout.ms=50000", "--set", "share.auto.offset.reset=earliest")
	if e := m["consumer.session.timeout.ms"]; e.Value != "50000" || e.Source != "group" {
		t.Fatalf("after --set: %+v", e)
	}
	out, errOut, code := cliRun(t, with("group", "config", "orders", "--set", "share.auto.offset.reset=by_duration:PT1H")...)
	if code == 0 || !strings.Contains(errOut, "INVALID_CONFIG") || !strings.Contains(errOut, "not built") {
		t.Fatalf("a refused value: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	m = read("--delete", "consumer.session.timeout.ms")
	if e := m["consumer.session.timeout.ms"]; e.Source != "default" || m["share.auto.offset.reset"].Source != "group" {
		t.Fatalf("after --delete: %+v", m)
	}
	table := cliOK(t, with("group", "config", "orders")...)
	if !strings.Contains(table, "share.auto.offset.reset") || !strings.Contains(table, "earliest") || !strings.Contains(table, "SOURCE") {
		t.Fatalf("table:\n%s", table)
	}
}
