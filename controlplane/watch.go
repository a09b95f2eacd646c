package controlplane

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// watchHeartbeat is the idle heartbeat of the bucket watchers. The KV
// API's watchers use 5s, which leaves a watcher whose consumer lived on a
// lost NATS node blind for 10-20s; a 1s heartbeat lets the client notice
// and recreate the consumer within a few seconds.
const watchHeartbeat = time.Second

// bucketWatch follows every key of one KV bucket with an ordered push
// consumer (the same mechanism as jetstream.KeyValue.WatchAll, with a
// shorter heartbeat), delivering the latest value of each key and then every
// change. The NATS client runs the callback on one goroutine per
// subscription; the client recreates the consumer after a gap or lost
// heartbeats.
type bucketWatch struct {
	sub   *nats.Subscription
	ready chan struct{} // closed once the initial values are applied

	mu       sync.Mutex
	initDone bool
	received uint64
	initial  uint64
}

// startWatch subscribes to bucket and calls apply for each change, in
// revision order, from the client's delivery goroutine.
func startWatch(nc *nats.Conn, bucket string, apply func(change)) (*bucketWatch, error) {
	js, err := nc.JetStream()
	if err != nil {
		return nil, fmt.Errorf("controlplane: watch %s: %w", bucket, err)
	}
	prefix := "$KV." + bucket + "."
	w := &bucketWatch{ready: make(chan struct{})}
	w.mu.Lock() // hold off the callback until initial is known
	defer w.mu.Unlock()
	w.sub, err = js.Subscribe(prefix+">", func(m *nats.Msg) {
		meta, err := m.Metadata()
		if err != nil || !strings.HasPrefix(m.Subject, prefix) {
			return
		}
		apply(change{key: m.Subject[len(prefix):], rev: meta.Sequence.Stream, deleted: isDeleteOp(m.Header), value: m.Data})
		w.mu.Lock()
		defer w.mu.Unlock()
		w.received++
		if !w.initDone && (w.received >= w.initial || meta.NumPending == 0) {
			w.initDone = true
			close(w.ready)
		}
	}, nats.BindStream("KV_"+bucket), nats.OrderedConsumer(), nats.DeliverLastPerSubject(),
		nats.IdleHeartbeat(watchHeartbeat))
	if err != nil {
		return nil, fmt.Errorf("controlplane: watch %s: %w", bucket, err)
	}
	pending, err := w.sub.InitialConsumerPending()
	if err != nil {
		_ = w.sub.Unsubscribe()
		return nil, fmt.Errorf("controlplane: watch %s: %w", bucket, err)
	}
	w.initial = pending
	if pending == 0 {
		w.initDone = true
		close(w.ready)
	}
	return w, nil
}

// stop ends the subscription. A callback already running may still finish.
func (w *bucketWatch) stop() { _ = w.sub.Unsubscribe() }

// isDeleteOp reads the KV protocol's delete markers: an explicit delete or
// purge, or a server marker left when a key's TTL or the bucket's max age
// removed it.
func isDeleteOp(h nats.Header) bool {
	switch h.Get("KV-Operation") {
	case "DEL", "PURGE":
		return true
	}
	switch h.Get(jetstream.MarkerReasonHeader) {
	case "MaxAge", "Purge", "Remove":
		return true
	}
	return false
}
