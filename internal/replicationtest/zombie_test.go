package replicationtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
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
	// Its own client: the request waits on the paused node for longer than
	// the default read timeout (request timeout plus 10 s).
	zcl, err := kgo.NewClient(kgo.SeedBrokers(zombie.Kafka()), kgo.RequestTimeoutOverhead(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer zcl.Close()
	zb := zcl.SeedBrokers()[0]
	ctx := proctest.Context(t, 2*time.Minute)
	// Open the connection while the node runs, so the request only waits.
	if code, _, err := rawProduce(ctx, zb, c.topic, 0, 1, "x-before"); err != nil || code != 0 {
		t.Fatalf("acks=1 produce to the leader: code %d, %v", code, err)
	}
	zombie.Pause()
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
	zombie.Resume()
	r := <-res
	if r.err != nil {
		t.Fatalf("zombie produce: %v", r.err)
	}
	t.Logf("zombie %d answered acks=all with code %d (%v)", zid, r.code, kerr.ErrorForCode(r.code))
	n, extras := c.zombieRejoined(t, zid, newEpoch, lp)
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
	proctest.CheckEpochs(t, c.Nodes())
	c.CheckNoPanic()
}

// zombieRejoined waits until the zombie, node zid, follows partition 0 in
// newEpoch or later and the cluster has settled, lets lp have 200 more
// records acknowledged and stops it, and checks every acknowledged record
// (lp.checkAcked, whose figures it returns) and that the replicas are
// identical.
func (c *cluster) zombieRejoined(t *testing.T, zid, newEpoch int32, lp *loadProducer) (int, map[string]int64) {
	t.Helper()
	if err := proctest.WaitFor(30*time.Second, func() bool { return followedSince(c.node(zid), c.topic, 0, newEpoch) }); err != nil {
		t.Fatalf("zombie %d never became follower in epoch >= %d", zid, newEpoch)
	}
	c.waitSettled(60 * time.Second)
	lp.waitAcked(200, 30*time.Second)
	lp.stop()
	n, extras := lp.checkAcked(t)
	c.checkReplicasIdentical(30 * time.Second)
	return n, extras
}

// TestZombieLeaderCutFromControlPlane cuts a partition leader's NATS
// connections (through its proxy) while its Kafka listener stays
// reachable, and sends it acks=all writes throughout. The controller
// elects another leader once its session expires; the zombie must step
// down, and every write it acknowledged, before or after the election,
// must be in the final log at the offset it gave. After the control plane
// returns it must follow the new leader.
func TestZombieLeaderCutFromControlPlane(t *testing.T) {
	c := startCluster(t, "cutoff", 1)
	lp := c.startProducer(2*time.Millisecond, 1_000_000)
	lp.waitAcked(500, 30*time.Second)
	zid, _ := c.leaderOf(0, 30*time.Second)
	zombie := c.node(zid)
	zb, err := zombie.seed()
	if err != nil {
		t.Fatal(err)
	}
	ctx := proctest.Context(t, 3*time.Minute)
	type zack struct {
		value  string
		code   int16
		offset int64
	}
	var zacks []zack
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // ends at stop or after 5000 writes
		defer close(done)
		for i := range 5000 {
			select {
			case <-stop:
				return
			default:
			}
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			v := fmt.Sprintf("x-z-%d", i)
			code, off, err := rawProduce(rctx, zb, c.topic, 0, -1, v)
			cancel()
			if err == nil {
				zacks = append(zacks, zack{v, code, off})
			}
		}
	}()
	c.Proxy(zid).Cut(true)
	newLeader, newEpoch := c.leaderOf(0, 30*time.Second, zid)
	if err := proctest.WaitFor(30*time.Second, func() bool { return zombie.CountLines("stepped down: control plane unreachable") > 0 }); err != nil {
		t.Fatalf("zombie %d never stepped down without its control plane", zid)
	}
	lp.waitAcked(200, 30*time.Second)
	close(stop)
	<-done
	c.Proxy(zid).Cut(false)
	n, extras := c.zombieRejoined(t, zid, newEpoch, lp)
	codes := map[int16]int{}
	for _, z := range zacks {
		codes[z.code]++
		if z.code != 0 {
			continue
		}
		if off, ok := extras[z.value]; !ok || off != z.offset {
			t.Fatalf("zombie %d acknowledged %s at offset %d; in the log: %v at %d", zid, z.value, z.offset, ok, off)
		}
	}
	t.Logf("zombie %d answered %d acks=all writes, codes %v; node %d led in epoch %d; read back %d records; %s",
		zid, len(zacks), codes, newLeader, newEpoch, n, lp.summary())
	proctest.CheckEpochs(t, c.Nodes())
	c.CheckNoPanic()
}
