package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUserVerbs(t *testing.T) {
	addr := startCLINode(t)
	with := func(args ...string) []string { return append(args, "--bootstrap", addr) }
	dir := t.TempDir()
	pass := filepath.Join(dir, "alice.pass")
	if err := os.WriteFile(pass, []byte("alice-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := cliOK(t, with("user", "list")...); strings.TrimSpace(out) != "USER  MECHANISM  ITERATIONS" {
		t.Fatalf("empty list:\n%s", out)
	}
	cliOK(t, with("user", "create", "alice", "--password-file", pass)...)
	cliOK(t, with("user", "create", "alice", "--mechanism", "SCRAM-SHA-256", "--iterations", "8192", "--password-file", pass)...)
	cliOK(t, with("user", "create", "bob", "--password-file", pass)...)
	want := "USER   MECHANISM      ITERATIONS\nalice  SCRAM-SHA-256  8192\nalice  SCRAM-SHA-512  4096\nbob    SCRAM-SHA-512  4096\n"
	if out := cliOK(t, with("user", "list")...); out != want {
		t.Fatalf("list:\n%s\nwant:\n%s", out, want)
	}
	cliOK(t, with("user", "delete", "alice", "--mechanism", "SCRAM-SHA-256")...)
	if out := cliOK(t, with("user", "list", "--output", "json")...); strings.Contains(out, "SCRAM-SHA-256") || !strings.Contains(out, `"user": "bob"`) {
		t.Fatalf("after delete:\n%s", out)
	}
	// Kafka's errors reach the exit code: a missing credential, too few
	// iterations, an empty password.
	for _, args := range [][]string{
		{"user", "delete", "carol"},
		{"user", "create", "carol", "--iterations", "100", "--password-file", pass},
		{"user", "create", "carol", "--password-file", filepath.Join(dir, "missing")},
	} {
		if _, errOut, code := cliRun(t, with(args...)...); code == 0 {
			t.Errorf("shale %s exited 0 (%s)", strings.Join(args, " "), errOut)
		}
	}
}
