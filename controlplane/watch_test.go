package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shale-io/shale/infra/natsembed"
)

// asyncErrors connects to s with an error handler that records the
// client's asynchronous errors.
func connectRecordingErrors(t *testing.T, s *natsembed.Server) (*nats.Conn, func(substr string) bool) {
	t.Helper()
	var mu sync.Mutex
	var errs []string
	nc, err := s.Connect(nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		mu.Lock()
		errs = append(errs, err.Error())
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, func(substr string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range errs {
			if strings.Contains(e, substr) {
				return true
			}
		}
		return false
	}
}

// starveWatch takes w down: it deletes the watch's consumer and takes the
// stream's last consumer slot, so that the NATS client's attempt to
// recreate it (after two missed heartbeats) fails with "maximum consumers
// limit reached", an error it does not retry: it unsubscribes and tells
// only the connection's error handler (seen), as after any such error. It
// returns once the watch is down, and frees the slot at cleanup or when
// free is called.
func starveWatch(t *testing.T, js jetstream.JetStream, w *bucketWatch, seen func(string) bool) (free func()) {
	t.Helper()
	ctx := testCtx(t)
	stream, err := js.Stream(ctx, "KV_"+w.bucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := info.Config
	cfg.MaxConsumers = info.State.Consumers
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	// The client may recreate the consumer between the delete and the
	// squatter (two missed heartbeats on a busy machine): then take its new
	// consumer away again.
	eventually(t, 20*time.Second, "the watch's consumer replaced by a squatter", func() bool {
		w.mu.Lock()
		deliver := ""
		if w.mu.sub != nil { // nil: the supervisor has it down already
			deliver = w.mu.sub.Subject
		}
		w.mu.Unlock()
		for ci := range stream.ListConsumers(ctx).Info() {
			if deliver != "" && ci.Config.DeliverSubject == deliver {
				if err := stream.DeleteConsumer(ctx, ci.Name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
					t.Fatal(err)
				}
			}
		}
		_, err := stream.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "squatter", AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil && !errors.Is(err, jetstream.ErrMaximumConsumersLimit) {
			t.Fatal(err)
		}
		return err == nil
	})
	eventually(t, 15*time.Second, "the watch to be down", func() bool {
		// The client gave up its subscription, or (when the bucket had
		// changes to deliver) the supervisor found it stalled and failed
		// to re-establish it.
		w.mu.Lock()
		defer w.mu.Unlock()
		return seen("maximum consumers limit reached") || w.mu.sub == nil
	})
	var once sync.Once
	free = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := stream.DeleteConsumer(ctx, "squatter"); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
				t.Error(err)
			}
			cfg.MaxConsumers = -1
			if _, err := js.UpdateStream(ctx, cfg); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(free)
	return free
}

// fastMonitor is a monitor whose watches check their subscription every
// 100 ms.
func fastMonitor() *ConnMonitor {
	m := NewConnMonitor(quietLogger())
	m.checkInterval = 100 * time.Millisecond
	m.soloHeartbeat = watchHeartbeat // the client notices a starved consumer sooner
	return m
}

// TestWatchOutlivesTheClientGivingUp: when the NATS client fails to
// recreate a watch's ordered consumer with an error it does not retry, it
// ends the subscription and tells only the connection's error handler.
// Before, the Store's watch then stopped delivering for good, silently:
// here the node would never learn of a broker (or of a partition's new
// leader and ISR). Now the watch's supervisor re-establishes it, and the
// changes made meanwhile reach the cache. This test failed on the earlier
// watch (waiting for broker 7: timeout).
func TestWatchOutlivesTheClientGivingUp(t *testing.T) {
	srv := startNATS(t)
	writer := openStore(t, connect(t, srv), StoreConfig{})
	nc, seen := connectRecordingErrors(t, srv)
	mon := fastMonitor()
	reader := openStore(t, nc, StoreConfig{Monitor: mon})
	js, err := jetstream.New(connect(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if err := writer.RegisterBroker(ctx, broker(1)); err != nil {
		t.Fatal(err)
	}
	hasBroker := func(id int32) func() bool {
		return func() bool {
			for _, b := range reader.Brokers() {
				if b.NodeID == id {
					return true
				}
			}
			return false
		}
	}
	eventually(t, 10*time.Second, "broker 1", hasBroker(1))

	other := openStore(t, connect(t, srv), StoreConfig{})
	third := openStore(t, connect(t, srv), StoreConfig{})
	free := starveWatch(t, js, reader.watches[0], seen) // shale_brokers
	// A change while the consumer cannot be made, then one after.
	if err := other.RegisterBroker(ctx, broker(7)); err != nil {
		t.Fatal(err)
	}
	free()
	if err := third.RegisterBroker(ctx, broker(8)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "broker 7", hasBroker(7))
	eventually(t, 10*time.Second, "broker 8", hasBroker(8))
	if n := mon.Stats().WatchRestarts; n < 1 {
		t.Errorf("watch restarts counted: %d, want at least 1", n)
	}
}

// TestWatchReestablishedAppliesKeysGoneMeanwhile: a key deleted while the
// watch was down, whose delete marker was purged before the watch came
// back, is applied as deleted when the watch is re-established: the new
// subscription's initial values do not mention it.
func TestWatchReestablishedAppliesKeysGoneMeanwhile(t *testing.T) {
	srv := startNATS(t)
	nc, seen := connectRecordingErrors(t, srv)
	js, err := jetstream.New(connect(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "watchtest"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	state := map[string]string{} // key -> value; deleted keys removed
	revs := map[string]uint64{}
	w, err := startWatch(nc, "watchtest", fastMonitor(), func(ch change) {
		mu.Lock()
		defer mu.Unlock()
		if ch.rev <= revs[ch.key] {
			return
		}
		revs[ch.key] = ch.rev
		if ch.deleted {
			delete(state, ch.key)
		} else {
			state[ch.key] = string(ch.value)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.stop)
	holds := func(want map[string]string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return fmt.Sprint(state) == fmt.Sprint(want)
		}
	}
	for _, k := range []string{"gone", "kept", "changed"} {
		if _, err := kv.PutString(ctx, k, "v1"); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "the three keys", holds(map[string]string{"gone": "v1", "kept": "v1", "changed": "v1"}))

	free := starveWatch(t, js, w, seen)
	if err := kv.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	// The marker goes too (kv.PurgeDeletes would need a consumer).
	stream, err := js.Stream(ctx, "KV_watchtest")
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(ctx, jetstream.WithPurgeSubject("$KV.watchtest.gone")); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.PutString(ctx, "changed", "v2"); err != nil {
		t.Fatal(err)
	}
	free()
	eventually(t, 10*time.Second, "the watch's state to follow the bucket", holds(map[string]string{"kept": "v1", "changed": "v2"}))
}

// TestStalled: a watch is stalled when it is behind the stream at two
// checks in a row and applied nothing in between; not when it moves, is
// caught up, or has one check only.
func TestStalled(t *testing.T) {
	p := func(applied, last uint64) watchProgress {
		return watchProgress{applied: applied, last: last, valid: true}
	}
	for _, c := range []struct {
		prev, cur watchProgress
		want      bool
	}{
		{p(5, 9), p(5, 9), true},
		{p(5, 9), p(5, 12), true},
		{p(5, 9), p(6, 9), false},
		{p(9, 9), p(9, 9), false},
		{p(9, 9), p(9, 10), false}, // one check behind only
		{watchProgress{}, p(5, 9), false},
	} {
		if got := stalled(c.prev, c.cur); got != c.want {
			t.Errorf("stalled(%+v, %+v) = %v, want %v", c.prev, c.cur, got, c.want)
		}
	}
}
