package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/shale-io/shale/internal/testnode"
)

// TestBrokerVerbs: `shale broker list` prints the node as live in a table,
// `shale broker unregister` refuses the live node (exit 1, INVALID_REQUEST)
// and an unknown id (BROKER_ID_NOT_REGISTERED), and a bad id is a usage
// error (exit 2). The fenced rows and a successful unregister are
// TestUnregisterBroker's (internal/membershiptest, several processes).
func TestBrokerVerbs(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	var out, errb bytes.Buffer
	if code := run([]string{"broker", "list", "--bootstrap", n.KafkaAddr()}, &out, &errb); code != 0 {
		t.Fatalf("broker list: exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NODE") || !strings.Contains(lines[1], n.KafkaAddr()) || !strings.HasSuffix(lines[1], "live") {
		t.Fatalf("broker list:\n%s", out.String())
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"broker", "unregister", "0"}, 1, "INVALID_REQUEST"},
		{[]string{"broker", "unregister", "7"}, 1, "BROKER_ID_NOT_REGISTERED"},
		{[]string{"broker", "unregister", "x"}, 2, "want a node id"},
		{[]string{"broker", "unregister"}, 2, "name the broker id"},
	} {
		out.Reset()
		errb.Reset()
		if code := run(append(c.args, "--bootstrap", n.KafkaAddr()), &out, &errb); code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("shale %v: exit %d, %q; want exit %d and %q", c.args, code, errb.String(), c.code, c.want)
		}
	}
}
