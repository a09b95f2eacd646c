package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// watchHeartbeat is the idle heartbeat of the bucket watchers on a NATS
// cluster. The KV API's watchers use 5s, which leaves a watcher whose
// consumer lived on a lost NATS node blind for 10-20s; a 1s heartbeat lets
// the client notice and recreate the consumer within a few seconds.
const watchHeartbeat = time.Second

// soloHeartbeat is the heartbeat on a NATS server that is not in a
// cluster (the embedded server, or one external server), the KV API's:
// there the consumer cannot be lost while the connection stays up, and
// after a reconnection each watch asks at once whether its consumer
// survived (checkAfterReconnect), so a fast heartbeat buys nothing. A
// watch's heartbeats were most of an idle cluster's NATS messages.
const soloHeartbeat = 5 * time.Second

// defaultWatchCheck is how often a watch's supervisor checks that its
// subscription is alive and keeps up with its bucket (ConnMonitor's
// checkInterval).
const defaultWatchCheck = 5 * time.Second

// settingsPace is how much slower the watches of the settings buckets
// (settingsBuckets) beat and are checked: watchHeartbeat and the check
// interval times this. Each watch costs NATS a heartbeat message per beat
// and a stream-info request (with its API advisory) per check; at idle the
// cluster's watches were about half of NATS's messages, and these buckets
// change only when an operator acts, and miss nothing while the client
// recreates a consumer (they are re-read whole). On a single NATS server
// every watch's stream-info check runs at this pace (its subscription's
// validity, which costs no request, is still checked at the check
// interval).
const settingsPace = 5

// settingsBuckets are the buckets whose watches run at settingsPace: client
// metrics subscriptions, client quotas, feature levels, group configs. The
// buckets a failover or an authorization decision reads (brokers,
// registrations, the controller, topics, partitions, ACLs, remote
// segments, the cluster record) keep the fast pace.
var settingsBuckets = map[string]bool{
	BucketClientMetrics: true, BucketClientQuotas: true, BucketFeatures: true, BucketGroupConfigs: true,
}

// watchPace returns bucket's watch heartbeat, the interval of its
// supervisor's checks and how many checks make one that reads the stream
// (stallEvery), given the monitor's check interval and solo heartbeat
// (soloHeartbeat) and whether the connected NATS server is in a cluster.
func watchPace(bucket string, check, solo time.Duration, clustered bool) (heartbeat, every time.Duration, stallEvery int) {
	switch {
	case settingsBuckets[bucket]:
		return settingsPace * watchHeartbeat, settingsPace * check, 1
	case !clustered:
		return solo, check, settingsPace
	}
	return watchHeartbeat, check, 1
}

// watchRequestTimeout bounds each JetStream request of a supervisor.
const watchRequestTimeout = 5 * time.Second

// bucketWatch follows every key of one KV bucket with an ordered push
// consumer (the same mechanism as jetstream.KeyValue.WatchAll, with a
// shorter heartbeat), delivering the latest value of each key and then every
// change. The NATS client runs the callback on one goroutine per
// subscription and recreates the consumer after a gap or lost heartbeats.
//
// The client gives up on a subscription when it cannot recreate the
// consumer (an API error other than "not available now"): it unsubscribes
// and tells only the connection's error handler. So a supervisor goroutine
// checks every checkInterval that the subscription is valid, and every
// stallEvery checks that it keeps up with the bucket (its last applied
// stream sequence reaches the stream's last one, or moves); right after a
// reconnection it asks whether the consumer survived; and otherwise it
// re-establishes the watch: a
// new subscription that delivers each key's latest value again, from which
// the cache takes what it missed (older revisions are ignored), and after
// which the keys this watch knew but the bucket no longer holds are applied
// as deleted (their delete markers may have aged out meanwhile). Each
// re-establishment is logged and counted (ConnMonitor).
//
// apply is called with w.mu held, one change at a time, in revision order
// within a subscription; changes of a replaced subscription are dropped.
type bucketWatch struct {
	nc     *nats.Conn
	js     nats.JetStreamContext
	bucket string
	prefix string // "$KV.<bucket>."
	// heartbeat, check and stallEvery are the watch's pace (watchPace).
	heartbeat, check time.Duration
	stallEvery       int
	apply            func(change)
	log              *slog.Logger
	mon              *ConnMonitor
	ready            chan struct{} // closed once a subscription's initial values are applied

	ctx    context.Context // canceled by stop
	cancel context.CancelFunc
	done   chan struct{} // closed when the supervisor returns

	mu struct {
		sync.Mutex
		sub     *nats.Subscription // nil after a failed re-establishment
		gen     uint64             // the subscription's generation; callbacks of others are dropped
		stopped bool
		ready   bool // ready is closed
		// lastSeq is the highest stream sequence this watch has applied,
		// or the stream's last sequence when the current subscription
		// started once its initial values are in.
		lastSeq uint64
		// live holds the keys this watch last saw set, with their revision.
		live map[string]uint64
		// The current subscription's initial delivery: floor is the
		// stream's last sequence read before it started, initial its
		// pending count, received what it delivered so far, seen the keys
		// it delivered (nil once reconciled).
		floor, initial, received uint64
		seen                     map[string]struct{}
	}
}

// startWatch subscribes to bucket and calls apply for each change, in
// revision order, from the client's delivery goroutine, and starts the
// watch's supervisor. mon may be nil (logs to slog.Default, not counted).
func startWatch(nc *nats.Conn, bucket string, mon *ConnMonitor, apply func(change)) (*bucketWatch, error) {
	if mon == nil {
		mon = NewConnMonitor(nil)
	}
	js, err := nc.JetStream(nats.MaxWait(watchRequestTimeout))
	if err != nil {
		return nil, fmt.Errorf("controlplane: watch %s: %w", bucket, err)
	}
	heartbeat, check, stallEvery := watchPace(bucket, mon.checkInterval, mon.soloHeartbeat, nc.ConnectedClusterName() != "")
	w := &bucketWatch{nc: nc, js: js, bucket: bucket, prefix: "$KV." + bucket + ".", apply: apply,
		heartbeat: heartbeat, check: check, stallEvery: stallEvery,
		log: mon.log.With("component", "controlplane", "bucket", bucket), mon: mon,
		ready: make(chan struct{}), done: make(chan struct{})}
	w.mu.live = map[string]uint64{}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	if err := w.subscribe(); err != nil {
		w.cancel()
		return nil, fmt.Errorf("controlplane: watch %s: %w", bucket, err)
	}
	reconnected, unsubscribe := mon.reconnected.subscribe()
	go func() {
		defer unsubscribe()
		w.supervise(reconnected)
	}()
	return w, nil
}

// subscribe starts a new subscription, replacing the current one.
func (w *bucketWatch) subscribe() error {
	w.mu.Lock()
	old := w.mu.sub
	w.mu.sub = nil
	w.mu.gen++
	gen := w.mu.gen
	w.mu.Unlock()
	if old != nil {
		_ = old.Unsubscribe()
	}
	// Every key set at or below floor is in the new subscription's initial
	// delivery, if the bucket still holds it.
	ctx, cancel := context.WithTimeout(w.ctx, watchRequestTimeout)
	defer cancel()
	info, err := w.js.StreamInfo("KV_"+w.bucket, nats.Context(ctx))
	if err != nil {
		return fmt.Errorf("reading the stream's state: %w", err)
	}
	w.mu.Lock() // hold off the callback until the initial count is known
	defer w.mu.Unlock()
	if w.mu.stopped {
		return context.Canceled
	}
	sub, err := w.js.Subscribe(w.prefix+">", func(m *nats.Msg) { w.deliver(gen, m) },
		nats.BindStream("KV_"+w.bucket), nats.OrderedConsumer(), nats.DeliverLastPerSubject(),
		nats.IdleHeartbeat(w.heartbeat)) // no nats.Context: the client would unsubscribe when it ends
	if err != nil {
		return err
	}
	pending, err := sub.InitialConsumerPending()
	if err != nil {
		_ = sub.Unsubscribe()
		return err
	}
	w.mu.sub = sub
	w.mu.floor, w.mu.initial, w.mu.received = info.State.LastSeq, pending, 0
	w.mu.seen = map[string]struct{}{}
	if pending == 0 {
		w.reconcileLocked()
		w.markReadyLocked()
	}
	return nil
}

// deliver applies one message of subscription gen.
func (w *bucketWatch) deliver(gen uint64, m *nats.Msg) {
	meta, err := m.Metadata()
	if err != nil || !strings.HasPrefix(m.Subject, w.prefix) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.gen != gen || w.mu.stopped {
		return
	}
	seq := meta.Sequence.Stream
	ch := change{key: m.Subject[len(w.prefix):], rev: seq, deleted: isDeleteOp(m.Header), value: m.Data}
	w.apply(ch)
	w.mu.lastSeq = max(w.mu.lastSeq, seq)
	if ch.deleted {
		delete(w.mu.live, ch.key)
	} else {
		w.mu.live[ch.key] = seq
	}
	if w.mu.seen == nil {
		return
	}
	w.mu.seen[ch.key] = struct{}{}
	w.mu.received++
	if meta.NumPending == 0 {
		// Everything the stream held when this message was sent has been
		// delivered: the keys not seen are gone.
		w.reconcileLocked()
	}
	if w.mu.received >= w.mu.initial || meta.NumPending == 0 {
		w.markReadyLocked()
	}
}

// reconcileLocked ends the current subscription's initial delivery: a key
// this watch knew, set below the floor and not delivered again, is no
// longer in the bucket, and is applied as deleted at the floor's revision
// (above any it had). A key set exactly at the floor and removed before
// the subscription started without a marker is missed: the bucket's
// deletes, purges and TTL expiries all leave markers.
//
// REQUIRES: w.mu held.
func (w *bucketWatch) reconcileLocked() {
	var gone []string
	for key, rev := range w.mu.live {
		if _, ok := w.mu.seen[key]; !ok && rev < w.mu.floor {
			gone = append(gone, key)
		}
	}
	for _, key := range gone {
		w.apply(change{key: key, rev: w.mu.floor, deleted: true})
		delete(w.mu.live, key)
	}
	if len(gone) > 0 {
		w.log.Warn("keys removed from the bucket while its watch was down, applied as deleted", "keys", len(gone))
	}
	w.mu.seen = nil
	w.mu.lastSeq = max(w.mu.lastSeq, w.mu.floor)
}

// REQUIRES: w.mu held.
// initialLoad is how many values the current subscription's initial
// delivery has applied, of how many.
func (w *bucketWatch) initialLoad() (received, initial uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.received, w.mu.initial
}

func (w *bucketWatch) markReadyLocked() {
	if !w.mu.ready {
		w.mu.ready = true
		close(w.ready)
	}
}

// supervise re-establishes the watch when its subscription ended or stalls,
// until stop.
func (w *bucketWatch) supervise(reconnected <-chan struct{}) {
	defer close(w.done)
	t := time.NewTicker(w.check)
	defer t.Stop()
	var prev watchProgress
	for checks := 0; ; {
		select {
		case <-w.ctx.Done():
			return
		case <-reconnected:
			prev = watchProgress{}
			w.checkAfterReconnect()
			continue
		case <-t.C:
		}
		if w.nc.IsClosed() {
			return // the owner closes the connection after the watch
		}
		if !w.nc.IsConnected() {
			prev = watchProgress{} // the client resubscribes when it reconnects
			continue
		}
		w.mu.Lock()
		sub, seq := w.mu.sub, w.mu.lastSeq
		w.mu.Unlock()
		var reason string
		switch {
		case sub == nil:
			reason = "the last attempt to re-establish it failed"
		case !sub.IsValid():
			reason = "the NATS client ended its subscription"
		default:
			if checks++; checks%w.stallEvery != 0 {
				continue // the stream is read every stallEvery checks
			}
			last, err := w.streamLastSeq()
			if err != nil {
				w.log.Debug("control-plane watch: reading the stream's state", "err", err)
				continue
			}
			cur := watchProgress{applied: seq, last: last, valid: true}
			if !stalled(prev, cur) {
				prev = cur
				continue
			}
			reason = fmt.Sprintf("stalled: applied up to stream sequence %d while the bucket is at %d", seq, last)
		}
		prev = watchProgress{}
		w.restart(reason)
	}
}

// checkAfterReconnect asks, right after the connection came back, whether
// the subscription's consumer survived (a restarted NATS server may have
// lost it) and re-establishes the watch at once if not, instead of when
// the client has missed its heartbeats.
func (w *bucketWatch) checkAfterReconnect() {
	w.mu.Lock()
	sub := w.mu.sub
	w.mu.Unlock()
	if sub == nil || !sub.IsValid() {
		w.restart("its subscription did not survive the NATS reconnection")
		return
	}
	if _, err := sub.ConsumerInfo(); errors.Is(err, nats.ErrConsumerNotFound) {
		w.restart("its consumer did not survive the NATS reconnection")
	}
}

// watchProgress is one supervisor check: the stream sequence the watch had
// applied and the stream's last sequence.
type watchProgress struct {
	applied, last uint64
	valid         bool
}

// stalled reports whether a watch is stuck: behind the stream at two
// checks in a row without applying anything in between.
func stalled(prev, cur watchProgress) bool {
	return prev.valid && cur.valid && prev.applied < prev.last && cur.applied < cur.last && cur.applied == prev.applied
}

func (w *bucketWatch) streamLastSeq() (uint64, error) {
	ctx, cancel := context.WithTimeout(w.ctx, watchRequestTimeout)
	defer cancel()
	info, err := w.js.StreamInfo("KV_"+w.bucket, nats.Context(ctx))
	if err != nil {
		return 0, err
	}
	return info.State.LastSeq, nil
}

// restart replaces the subscription, logging why.
func (w *bucketWatch) restart(reason string) {
	if err := w.subscribe(); err != nil {
		if w.ctx.Err() == nil {
			w.log.Warn("control-plane watch down; retrying", "reason", reason, "err", err)
		}
		return
	}
	w.mon.watchRestarts.Add(1)
	w.log.Warn("control-plane watch re-established", "reason", reason)
}

// stop ends the subscription and the supervisor and waits for the
// supervisor. A callback already running may still finish. Idempotent.
func (w *bucketWatch) stop() {
	w.mu.Lock()
	w.mu.stopped = true
	sub := w.mu.sub
	w.mu.sub = nil
	w.mu.Unlock()
	w.cancel()
	if sub != nil {
		_ = sub.Unsubscribe()
	}
	<-w.done
}

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
