package e2e

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/kcattest"
	"github.com/shale-io/shale/internal/proctest"
)

// TestQuickstartKcat runs the README's quickstart against the binary:
//
//	echo 'hello shale' | kcat -P -b ADDR -t greetings
//	kcat -C -b ADDR -t greetings -o beginning -e
//
// kcat (librdkafka's CLI) is bin/kcat, installed by `make tools`; without it
// the test fails (internal/kcattest).
func TestQuickstartKcat(t *testing.T) {
	t.Parallel()
	kcat := kcattest.Path(t)
	n := newNode(t, t.TempDir())
	n.Start()
	n.WaitReady()

	run := func(stdin string, args ...string) string {
		t.Helper()
		ctx := proctest.Context(t, 60*time.Second)
		cmd := exec.CommandContext(ctx, kcat, args...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("kcat %s: %v\nstderr:\n%s", strings.Join(args, " "), err, errb.String())
		}
		return out.String()
	}
	run("hello shale\n", "-P", "-b", n.Kafka(), "-t", "greetings")
	got := run("", "-C", "-b", n.Kafka(), "-t", "greetings", "-o", "beginning", "-e")
	if got != "hello shale\n" {
		t.Fatalf("kcat consumed %q, want %q", got, "hello shale\n")
	}
	n.CheckNoPanic()
}
