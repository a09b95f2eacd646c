package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
)

// TestServeLogsOfAFreshNode runs `shale serve --log-format json` on an empty
// data dir: every line is one JSON object with no key twice (the node's
// own "node" attribute was repeated by the controller's "became
// controller"), and a fresh node, which holds no replica, says nothing
// about reporting replica log ends after an unclean start.
func TestServeLogsOfAFreshNode(t *testing.T) {
	bin := shaleBinary(t)
	n := proctest.Serve(t, bin, filepath.Join(t.TempDir(), "node"), []string{"--log-format", "json", "--nats-listen", "127.0.0.1:-1"})
	n.Start()
	n.WaitReady()
	if err := proctest.WaitFor(30*time.Second, func() bool {
		out := n.Output()
		return strings.Contains(out, `"msg":"shale node started"`) && strings.Contains(out, `"msg":"became controller"`)
	}); err != nil {
		t.Fatalf("the node did not log that it started and became controller: %v\n%s", err, n.Tail())
	}
	if code, _ := n.Stop(30 * time.Second); code != 0 {
		t.Fatalf("stop: exit %d\n%s", code, n.Tail())
	}
	lines := 0
	for _, line := range strings.Split(n.Output(), "\n") {
		if line == "" || strings.HasPrefix(line, "=== ") {
			continue
		}
		lines++
		if dup := duplicateKey(t, line); dup != "" {
			t.Errorf("key %q twice in %s", dup, line)
		}
		if strings.Contains(line, "reported replica log ends") {
			t.Errorf("a fresh node logs %s", line)
		}
	}
	if lines < 3 {
		t.Fatalf("%d log lines:\n%s", lines, n.Output())
	}
}

// duplicateKey returns a top-level key that appears twice in the JSON
// object line, or ""; a line that is not a JSON object fails the test.
func duplicateKey(t *testing.T, line string) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %s", line)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%v in %s", err, line)
		}
		key := tok.(string)
		if seen[key] {
			return key
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%v in %s", err, line)
		}
	}
	return ""
}
