package e2e

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestSIGKILLMidStream kills the node with SIGKILL at random points while an
// idempotent acks=all producer streams to a 4-partition topic, restarting it
// on the same data dir each time, and then checks that every acknowledged
// record is in the log exactly once, in order, at contiguous offsets.
func TestSIGKILLMidStream(t *testing.T) {
	t.Parallel()
	const (
		topic    = "crash"
		parts    = 4
		kills    = 5
		maxGrant = 3000 // records per round; kills*maxGrant + final <= 20k
		final    = 1000
	)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	n := newNode(t, t.TempDir())
	n.Start()
	n.WaitReady()
	createTopic(t, n.Kafka(), topic, parts)

	s := startStream(t, n.Kafka(), topic, parts)
	var granted int64
	for k := range kills {
		g := 1000 + rng.IntN(maxGrant-1000)
		before := s.acked.Load()
		granted += int64(g)
		// Kill somewhere in the middle of this round: after a random share
		// of its records is acknowledged, with the rest buffered or in flight.
		at := before + int64(1+rng.IntN(g*3/4))
		armKill(t, n, s, at)
		s.grant(g)
		n.WaitExit(60 * time.Second)
		t.Logf("kill %d: granted %d, acked %d, failed %d", k+1, granted, s.acked.Load(), s.failed.Load())
		n.Start()
		took := n.WaitReady()
		t.Logf("restart %d ready after %v", k+1, took.Round(time.Millisecond))
	}
	s.grant(final)
	granted += final
	s.flush(granted, 90*time.Second)
	s.stop()
	acked := s.ackedSet()
	t.Logf("granted %d, acknowledged %d, failed %d (last error %v)", granted, len(acked), s.failed.Load(), s.lastErr())
	if int64(len(acked))+s.failed.Load() != granted {
		t.Fatalf("%d acked + %d failed != %d produced: promises lost", len(acked), s.failed.Load(), granted)
	}
	if len(acked) < final {
		t.Fatalf("only %d records acknowledged", len(acked))
	}

	st := verifyLog(t, n.Kafka(), topic, parts, acked)
	t.Logf("log: %d records, end offsets %v, %d present without an ack", st.records, st.endOffsets, st.unackedIn)
	n.CheckNoPanic()
}
