package membershiptest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/internal/proctest"
)

// controlHooks order a race between the nodes deterministically by acting
// on the control plane the test's NATS server holds, as one more
// participant: they write a partition record as a leader would, hold the
// controller lease so that no node decides until the test lets it, and
// answer a dead node's liveness probes so that its registration outlives
// its process. Each hook stands for one ordering that a real run can take
// by chance; the test says which.
type controlHooks struct {
	t     testing.TB
	nc    *nats.Conn
	store *controlplane.Store
	kv    jetstream.KeyValue // the controller lease bucket
}

// hooks connects to c's NATS server; it is closed at the end of the test.
func (c *cluster) hooks() *controlHooks {
	c.t.Helper()
	nc, err := nats.Connect(c.NATSURL())
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(nc.Close)
	ctx := proctest.Context(c.t, 30*time.Second)
	st, err := controlplane.Open(ctx, nc, controlplane.StoreConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(st.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		c.t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, controlplane.BucketController)
	if err != nil {
		c.t.Fatal(err)
	}
	return &controlHooks{t: c.t, nc: nc, store: st, kv: kv}
}

// partition waits until the hooks' view of topic-p satisfies ok and
// returns it.
func (h *controlHooks) partition(topic string, p int32, d time.Duration, ok func(controlplane.PartitionState) bool) controlplane.PartitionState {
	h.t.Helper()
	var st controlplane.PartitionState
	if err := proctest.WaitFor(d, func() bool {
		var found bool
		st, found = h.store.Partition(topic, p)
		return found && ok(st)
	}); err != nil {
		h.t.Fatalf("%s-%d: not in the awaited state after %v: leader %d isr %v elr %v", topic, p, d, st.Leader, st.ISR, st.ELR)
	}
	return st
}

// readmit writes topic-p's record with ids back in the ISR, as the leader's
// ISR expansion does (replica.Manager's isrLoop, through
// controlplane.ChangeISR: the ELR is cleared once the ISR is back at
// min.insync.replicas).
func (h *controlHooks) readmit(topic string, p int32, minISR int, ids ...int32) controlplane.PartitionState {
	h.t.Helper()
	var written controlplane.PartitionState
	var err error
	ctx := proctest.Context(h.t, 10*time.Second)
	werr := proctest.WaitFor(10*time.Second, func() bool {
		st, ok := h.store.Partition(topic, p)
		if !ok {
			err = fmt.Errorf("%s-%d unknown", topic, p)
			return false
		}
		isr := slices.Clone(st.ISR)
		for _, id := range ids {
			if !slices.Contains(isr, id) {
				isr = append(isr, id)
			}
		}
		written, err = h.store.UpdatePartition(ctx, controlplane.ChangeISR(st, isr, minISR))
		return err == nil // on ErrConflict the cache catches up: read again
	})
	if werr != nil {
		h.t.Fatalf("re-admitting %v to %s-%d: %v", ids, topic, p, err)
	}
	return written
}

// holdLease takes the controller lease (waiting for the current holder's
// to end: call it once the holder is dead) and renews it until release, so
// no node acts as controller meanwhile. release deletes it; a candidate
// takes it at once.
func (h *controlHooks) holdLease(d time.Duration) (release func()) {
	h.t.Helper()
	ctx := proctest.Context(h.t, d)
	var rev uint64
	err := proctest.WaitFor(d, func() bool {
		r, err := h.kv.Create(ctx, controlplane.ControllerLeaseKey, []byte("test hook"))
		if err != nil {
			return false
		}
		rev = r
		return true
	})
	if err != nil {
		h.t.Fatalf("taking the controller lease: %v", err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	var renewErr error
	go func() {
		defer close(done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			r, err := h.kv.Update(ctx, controlplane.ControllerLeaseKey, []byte("test hook"), rev)
			if err != nil {
				renewErr = err
				return
			}
			rev = r
		}
	}()
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(stop)
			<-done
			if renewErr != nil {
				h.t.Errorf("renewing the held controller lease: %v", renewErr)
			}
			if err := h.kv.Delete(ctx, controlplane.ControllerLeaseKey, jetstream.LastRevision(rev)); err != nil &&
				!errors.Is(err, context.Canceled) {
				h.t.Errorf("releasing the controller lease: %v", err)
			}
		})
	}
	h.t.Cleanup(release)
	return release
}

// answerProbes answers the controller's liveness probes for node id's
// current registration (controlplane.LivenessSubject) as its process did,
// until stop: a controller cannot prove the process gone, so the
// registration stays live until its broker session expires.
func (h *controlHooks) answerProbes(id int32) (stop func()) {
	h.t.Helper()
	inc, ok := h.store.Incarnation(id)
	if !ok {
		h.t.Fatalf("node %d has no live registration", id)
	}
	sub, err := h.nc.Subscribe(controlplane.LivenessSubject(h.store.ClusterID(), id, inc), func(m *nats.Msg) { _ = m.Respond(nil) })
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.nc.Flush(); err != nil {
		h.t.Fatal(err)
	}
	var once sync.Once
	stop = func() { once.Do(func() { _ = sub.Unsubscribe() }) }
	h.t.Cleanup(stop)
	return stop
}

// live reports whether the hooks' view has a live registration for id.
func (h *controlHooks) live(id int32) bool {
	_, ok := h.store.Incarnation(id)
	return ok
}
