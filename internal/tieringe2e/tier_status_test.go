package tieringe2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shale-io/shale/broker"
)

// shaleBinary builds cmd/shale into a temporary dir, or returns
// $SHALE_E2E_BIN when set (as internal/e2e does).
func shaleBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("SHALE_E2E_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "shale")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/shale-io/shale/cmd/shale").CombinedOutput()
	if err != nil {
		t.Fatalf("go build cmd/shale: %v\n%s", err, out)
	}
	return bin
}

// checkTierStatus runs `shale tier status` against n's admin endpoint, in
// JSON and in text, and checks topic's partition 0: log start 0, local log
// start past minLocalStart, high watermark hw, remote segments and bytes.
func checkTierStatus(t *testing.T, n *broker.Node, topic string, minLocalStart, hw int64) {
	t.Helper()
	bin := shaleBinary(t)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "tier", "status", "--admin", n.AdminAddr(), "--topic", topic, "--output", "json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("shale tier status --output json: %v\n%s", err, stderr.String())
	}
	// One entry per node asked, as shale replication status prints.
	var nodes []broker.TierStatus
	if err := json.Unmarshal(stdout.Bytes(), &nodes); err != nil {
		t.Fatalf("tier status JSON: %v\n%s", err, stdout.String())
	}
	if len(nodes) != 1 {
		t.Fatalf("tier status of one node: %d entries, want 1\n%s", len(nodes), stdout.String())
	}
	st := nodes[0]
	if len(st.Partitions) != 1 {
		t.Fatalf("tier status --topic %s: %d partitions, want 1\n%s", topic, len(st.Partitions), stdout.String())
	}
	p := st.Partitions[0]
	if p.Topic != topic || p.Partition != 0 || p.LogStartOffset != 0 || p.LocalLogStartOffset < minLocalStart ||
		p.HighWatermark != hw || p.RemoteSegments == 0 || p.RemoteBytes == 0 ||
		p.LastTieredOffset < p.LocalLogStartOffset-1 || p.LastTieredOffset >= hw {
		t.Fatalf("tier status: %+v; want log start 0, local log start >= %d, high watermark %d, remote segments, last tiered in [local start-1, hw)",
			p, minLocalStart, hw)
	}

	stdout.Reset()
	cmd = exec.Command(bin, "tier", "status", "--admin", n.AdminAddr())
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("shale tier status: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), topic) {
		t.Fatalf("shale tier status prints no line for %s:\n%s", topic, stdout.String())
	}
	t.Logf("shale tier status:\n%s", stdout.String())
}
