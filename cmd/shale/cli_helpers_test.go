package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/shale-io/shale/internal/testnode"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// cliRun runs the CLI in-process and returns stdout, stderr and the exit code.
func cliRun(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return out.String(), errb.String(), code
}

// cliOK runs the CLI and fails the test unless it exits 0.
func cliOK(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := cliRun(t, args...)
	if code != 0 {
		t.Fatalf("shale %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// startCLINode starts one in-process node and returns its Kafka address.
func startCLINode(t *testing.T) string {
	t.Helper()
	return testnode.Start(t, t.TempDir()).KafkaAddr()
}

var (
	reTopicID  = regexp.MustCompile(`(?m)^ID(\s+)\S+`)
	reJSONID   = regexp.MustCompile(`"id": "[^"]*"`)
	reAddr     = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	reTrailing = regexp.MustCompile(`(?m)[ \t]+$`)
)

// normalize replaces volatile fields (topic ids, ports) and trailing blanks
// so that output can be compared with golden files.
func normalize(s string) string {
	s = reTopicID.ReplaceAllString(s, "ID${1}<topic-id>")
	s = reJSONID.ReplaceAllString(s, `"id": "<topic-id>"`)
	s = reAddr.ReplaceAllString(s, "127.0.0.1:<port>")
	return reTrailing.ReplaceAllString(s, "")
}

// golden compares normalize(got) with testdata/name, or rewrites it with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	got = normalize(got)
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs from the golden file:\n--- got\n%s--- want\n%s", path, got, want)
	}
}
