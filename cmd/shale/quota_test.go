package main

import (
	"strings"
	"testing"
)

func TestQuotaVerbs(t *testing.T) {
	addr := startCLINode(t)
	with := func(args ...string) []string { return append(args, "--bootstrap", addr) }
	if out := cliOK(t, with("quota", "list")...); strings.TrimSpace(out) != "ENTITY  KEY  VALUE" {
		t.Fatalf("empty list:\n%s", out)
	}
	cliOK(t, with("quota", "set", "--user", "alice", "producer_byte_rate=1048576", "consumer_byte_rate=2097152")...)
	cliOK(t, with("quota", "set", "--user", "alice", "--client-id", "app", "request_percentage=12.5")...)
	cliOK(t, with("quota", "set", "--user-default", "shale.remote_fetch_byte_rate=1000000")...)
	cliOK(t, with("quota", "set", "--client-id-default", "producer_byte_rate=100")...)
	// validate-only changes nothing.
	if out := cliOK(t, with("quota", "set", "--client-id", "x", "producer_byte_rate=5", "--validate-only")...); !strings.Contains(out, "valid, not set") {
		t.Fatalf("validate-only: %s", out)
	}
	want := "ENTITY                    KEY                           VALUE\n" +
		"client-id=<default>       producer_byte_rate            100\n" +
		"user=<default>            shale.remote_fetch_byte_rate  1000000\n" +
		"user=alice                consumer_byte_rate            2097152\n" +
		"user=alice                producer_byte_rate            1048576\n" +
		"user=alice,client-id=app  request_percentage            12.5\n"
	if out := cliOK(t, with("quota", "list")...); out != want {
		t.Fatalf("list:\n%s\nwant:\n%s", out, want)
	}
	cliOK(t, with("quota", "delete", "--user", "alice", "producer_byte_rate")...)
	cliOK(t, with("quota", "delete", "--client-id-default")...)
	out := cliOK(t, with("quota", "list", "--output", "json")...)
	if strings.Contains(out, "producer_byte_rate") || !strings.Contains(out, `"consumer_byte_rate": 2097152`) || !strings.Contains(out, `"default_user": true`) {
		t.Fatalf("after deletes:\n%s", out)
	}
	// Kafka's errors reach the exit code: an unknown key, a fractional byte
	// rate, a non-positive value; usage errors exit 2.
	for _, args := range [][]string{
		{"quota", "set", "--user", "bob", "bogus_rate=1"},
		{"quota", "set", "--user", "bob", "producer_byte_rate=1.5"},
		{"quota", "set", "--user", "bob", "consumer_byte_rate=0"},
		{"quota", "delete", "--user", "nobody"},
	} {
		if _, errOut, code := cliRun(t, with(args...)...); code != 1 {
			t.Errorf("shale %s exited %d, want 1 (%s)", strings.Join(args, " "), code, errOut)
		}
	}
	for _, args := range [][]string{
		{"quota", "set", "producer_byte_rate=1"},
		{"quota", "set", "--user", "a", "--user-default", "producer_byte_rate=1"},
		{"quota", "set", "--user", "a", "producer_byte_rate=x"},
		{"quota", "set", "--user", "a"},
	} {
		if _, errOut, code := cliRun(t, with(args...)...); code != 2 {
			t.Errorf("shale %s exited %d, want 2 (%s)", strings.Join(args, " "), code, errOut)
		}
	}
}
