package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
)

// TestSIGTERM stops the node with SIGTERM while a producer streams, checks
// that it exits 0 within its shutdown timeout (plus the fixed time Close
// takes after it: up to 2 s to deregister, then NATS), that every partition
// directory holds a .clean-shutdown marker, and that after a restart (where
// the same producer finishes its stream) every acknowledged record is there
// exactly once.
func TestSIGTERM(t *testing.T) {
	t.Parallel()
	const (
		topic    = "graceful"
		parts    = 4
		shutdown = 5 * time.Second
		limit    = shutdown + 10*time.Second
	)
	dir := t.TempDir()
	n := newNode(t, dir, "--shutdown-timeout", shutdown.String())
	n.Start()
	n.WaitReady()
	createTopic(t, n.Kafka(), topic, parts)

	s := startStream(t, n.Kafka(), topic, parts)
	s.grant(2000)
	s.flush(2000, 60*time.Second)
	if got := s.acked.Load(); got != 2000 {
		t.Fatalf("%d of 2000 records acknowledged before the stop (last error %v)", got, s.lastErr())
	}

	// SIGTERM with more records buffered and in flight.
	term := make(chan struct{})
	s.onAcked(2500, func() { close(term) })
	s.grant(3000)
	select {
	case <-term:
	case <-time.After(60 * time.Second):
		t.Fatalf("only %d records acknowledged", s.acked.Load())
	}
	code, took := n.Stop(limit)
	t.Logf("exit code %d after %v, %d acknowledged at exit", code, took.Round(time.Millisecond), s.acked.Load())
	if code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}

	for p := range parts {
		marker := filepath.Join(dir, "logs", fmt.Sprintf("%s-%d", topic, p), ".clean-shutdown")
		if _, err := os.Stat(marker); err != nil {
			t.Errorf("partition %d: no clean-shutdown marker: %v", p, err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	n.Start()
	took = n.WaitReady()
	t.Logf("restart ready after %v", took.Round(time.Millisecond))
	// A graceful stop deregisters, so the restart need not wait for the TTL.
	if _, run2, _ := strings.Cut(n.Output(), "=== e2e: run 2"); strings.Contains(run2, "waiting for the previous registration") {
		t.Error("restart after SIGTERM waited for the old broker registration to expire: the stop did not deregister")
	}
	// The producer retries what the stopped node did not answer.
	s.flush(5000, 90*time.Second)
	s.stop()
	acked := s.ackedSet()
	t.Logf("after the restart: %d acknowledged, %d failed (last error %v)", len(acked), s.failed.Load(), s.lastErr())
	if int64(len(acked))+s.failed.Load() != 5000 {
		t.Fatalf("%d acked + %d failed != 5000 produced: promises lost", len(acked), s.failed.Load())
	}
	st := verifyLog(t, n.Kafka(), topic, parts, acked)
	t.Logf("log: %d records, end offsets %v, %d present without an ack", st.records, st.endOffsets, st.unackedIn)
	if !grepStderr(n, "stopped cleanly") {
		t.Fatal(`stderr lacks "stopped cleanly" after SIGTERM`)
	}
	n.CheckNoPanic()
}

func grepStderr(p *proctest.Node, s string) bool {
	return strings.Contains(p.Output(), s)
}
