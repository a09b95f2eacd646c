package controlplane

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// ConnMonitor logs and counts what happens to a node's NATS connection and
// to the control-plane watches on it. Its Options give the connection an
// error handler and disconnect, reconnect and close handlers that log
// through the node's logger (without them the NATS client prints its
// asynchronous errors to stderr); the Store and the other watched buckets
// count their watches' re-establishments in it (StoreConfig.Monitor).
// Safe for concurrent use.
type ConnMonitor struct {
	log *slog.Logger
	// checkInterval is how often each watch's supervisor checks its
	// subscription (tests shorten it).
	checkInterval time.Duration
	// soloHeartbeat is the watches' heartbeat on a NATS server that is not
	// in a cluster (watchPace; tests that starve a consumer shorten it).
	soloHeartbeat time.Duration

	disconnects, reconnects, asyncErrors, watchRestarts atomic.Uint64

	// reconnected tells the watches' supervisors of each reconnection.
	reconnected broadcast
}

// broadcast wakes every subscriber of an event that happened (each has a
// channel of one, so an event is never lost and never queued twice).
type broadcast struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

// subscribe returns a channel that receives after each event from now on,
// and the function that ends the subscription.
func (b *broadcast) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs == nil {
		b.subs = map[chan struct{}]struct{}{}
	}
	b.subs[ch] = struct{}{}
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs, ch)
	}
}

// notify wakes every subscriber.
func (b *broadcast) notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// NewConnMonitor returns a monitor logging to log (slog.Default if nil).
func NewConnMonitor(log *slog.Logger) *ConnMonitor {
	if log == nil {
		log = slog.Default()
	}
	return &ConnMonitor{log: log, checkInterval: defaultWatchCheck, soloHeartbeat: soloHeartbeat}
}

// Options are the connection options that route the NATS client's events
// to the monitor. Pass them to nats.Connect (after any other handler
// options, which they replace).
func (m *ConnMonitor) Options() []nats.Option {
	log := m.log.With("component", "nats")
	return []nats.Option{
		nats.ErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
			m.asyncErrors.Add(1)
			attrs := []any{"err", err}
			if sub != nil {
				attrs = append(attrs, "subject", sub.Subject)
			}
			if errors.Is(err, nats.ErrConsumerNotActive) && !nc.IsConnected() {
				// An ordered consumer's missed heartbeats while the
				// connection is down: the disconnect was logged, and the
				// client recreates the consumer once it is back.
				log.Debug("NATS consumer not active while disconnected", attrs...)
				return
			}
			log.Warn("NATS asynchronous error", attrs...)
		}),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if nc.IsClosed() {
				return // Close, logged by the closed handler
			}
			m.disconnects.Add(1)
			log.Warn("NATS connection lost; reconnecting", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			m.reconnects.Add(1)
			m.reconnected.notify()
			log.Info("NATS reconnected", "url", nc.ConnectedUrlRedacted(), "server", nc.ConnectedServerName())
		}),
		nats.ClosedHandler(func(nc *nats.Conn) {
			if err := nc.LastError(); err != nil {
				log.Warn("NATS connection closed", "err", err)
				return
			}
			log.Debug("NATS connection closed")
		}),
	}
}

// ConnStats are a monitor's totals since it was made.
type ConnStats struct {
	// Disconnects counts connections lost (not closed by the node);
	// Reconnects the reconnections after them.
	Disconnects, Reconnects uint64
	// AsyncErrors counts the client's asynchronous errors (a consumer's
	// missed heartbeats, a slow consumer, a permission violation).
	AsyncErrors uint64
	// WatchRestarts counts control-plane watches re-established after
	// their subscription ended or stalled.
	WatchRestarts uint64
}

// Stats returns the monitor's totals.
func (m *ConnMonitor) Stats() ConnStats {
	return ConnStats{Disconnects: m.disconnects.Load(), Reconnects: m.reconnects.Load(),
		AsyncErrors: m.asyncErrors.Load(), WatchRestarts: m.watchRestarts.Load()}
}
