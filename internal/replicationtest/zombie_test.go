package replicationtest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestZombieLeaderStaleEpoch pauses a partition's leader with an acks=all
// produce request already on its socket, lets the controller elect another
// leader, and resumes it. The zombie still believes it leads when it reads
// the request; it must not acknowledge it (its followers now fetch from the
// new leader, so its high watermark cannot advance), it must become a
// follower and cut the record, and a fetch carrying its old leader epoch
// is fenced with FENCED_LEADER_EPOCH by the new leader.
func TestZombieLeaderStaleEpoch(t *testing.T) {
	c := startCluster(t, "zombie", 1)
	lp := c.startProducer(2*time.Millisecond, 1_000_000)
	lp.waitAcked(500, 30*time.Second)
	zid, oldEpoch := c.leaderOf(0, 30*time.Second)
	zombie := c.node(zid)
	zb, err := zombie.seed()
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 2*time.Minute)
	// Open the connection while the node runs, so the request only waits.
	if code, _, err := rawProduce(ctx, zb, c.topic, 0, 1, "x-before"); err != nil || code != 0 {
		t.Fatalf("acks=1 produce to the leader: code %d, %v", code, err)
	}
	zombie.pause()
	type result struct {
		code   int16
		offset int64
		err    error
	}
	res := make(chan result, 1)
	go func() { // ends when the zombie answers or ctx ends
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		code, off, err := rawProduce(rctx, zb, c.topic, 0, -1, "x-zombie")
		res <- result{code, off, err}
	}()
	newLeader, newEpoch := c.leaderOf(0, 30*time.Second, zid)
	if newEpoch <= oldEpoch {
		t.Fatalf("new leader %d in epoch %d, not past %d", newLeader, newEpoch, oldEpoch)
	}
	lp.waitAcked(200, 30*time.Second) // the new leader's log moves past the zombie's
	nb, err := c.node(newLeader).seed()
	if err != nil {
		t.Fatal(err)
	}
	code, err := rawReplicaFetch(ctx, nb, c.topic, 0, zid, oldEpoch, 0)
	if err != nil {
		t.Fatal(err)
	}
	if code != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("fetch in stale epoch %d from the new leader %d: code %d (%v), want FENCED_LEADER_EPOCH", oldEpoch, newLeader, code, kerr.ErrorForCode(code))
	}
	zombie.resume()
	r := <-res
	if r.err != nil {
		t.Fatalf("zombie produce: %v", r.err)
	}
	t.Logf("zombie %d answered acks=all with code %d (%v)", zid, r.code, kerr.ErrorForCode(r.code))
	if err := waitFor(30*time.Second, func() bool { return followedSince(zombie, c.topic, 0, newEpoch) }); err != nil {
		t.Fatalf("zombie %d never became follower in epoch >= %d", zid, newEpoch)
	}
	c.waitSettled(60 * time.Second)
	lp.waitAcked(200, 30*time.Second)
	lp.stop()
	n, extras := lp.checkAcked(t)
	c.checkReplicasIdentical(30 * time.Second)
	off, kept := extras["x-zombie"]
	switch {
	case r.code == 0 && (!kept || off != r.offset):
		t.Fatalf("the zombie acknowledged x-zombie at offset %d, and it is lost (kept %v at %d)", r.offset, kept, off)
	case r.code == 0:
		t.Fatalf("the zombie acknowledged an acks=all write in stale epoch %d", oldEpoch)
	case kept:
		t.Fatalf("x-zombie, refused with code %d, is in the log at offset %d", r.code, off)
	}
	t.Logf("read back %d records; %s", n, lp.summary())
	checkEpochs(t, c.nodes)
	c.checkNoPanic()
}
