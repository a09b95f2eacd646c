package e2e

import (
	"syscall"
	"testing"

	"github.com/shale-io/shale/internal/proctest"
)

// newNode returns a node for `shale serve` on dataDir with fresh Kafka and
// admin ports (kept across restarts) and a random embedded NATS port.
func newNode(t *testing.T, dataDir string, extra ...string) *proctest.Node {
	return proctest.Serve(t, shaleBin, dataDir, append([]string{"--nats-listen", "127.0.0.1:-1"}, extra...),
		proctest.Name("e2e"))
}

// armKill makes the stream SIGKILL n's current run from inside the promise
// of its at-th acknowledged record.
func armKill(t *testing.T, n *proctest.Node, s *stream, at int64) {
	t.Helper()
	cmd := n.Cmd()
	if cmd == nil {
		t.Fatal("e2e: armKill without a live run")
	}
	s.onAcked(at, func() { cmd.Process.Signal(syscall.SIGKILL) })
}
