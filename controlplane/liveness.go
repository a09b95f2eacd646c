package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Fast detection of a dead broker process (issue 15 item 10). A
// broker's session (its shale_brokers key) expires only BrokerTTL after its last keepalive, and the
// controller lease LeaseTTL after its last renewal; a broker killed with
// SIGKILL would keep its partitions without a leader for that long. But a
// dead process leaves two traces at once: the NATS server drops its
// connection, and with it the interest in the broker's liveness subject
// (a request there is answered "no responders"), and its Kafka listener
// refuses connections. The controller probes every registered broker's
// liveness subject every livenessInterval; a broker with livenessMisses
// consecutive "no responders" whose Kafka address also refuses a TCP
// connection is dead (one miss suffices: the refused connection is the
// second, independent proof, and a probe each 400 ms finds a dead process
// as soon as two each 200 ms did, with half the messages, which were the
// most of an idle cluster's NATS traffic), and the controller deletes its session key (by
// revision, as if it had expired; its registration stays: the broker is
// fenced, registrations.go): every node sees BrokerDown and the controller
// elects at once. A controller candidate probes the lease's
// holder the same way and deletes the lease (by revision) when its process
// is gone. Anything short of proof leaves the timeouts in charge: a paused
// process keeps its connection (probes time out, no "no responders"), and
// a node cut off from NATS, or a host that is gone, does not refuse
// connections (the dial times out); those still wait for BrokerTTL, during
// which the node itself steps down (broker.sessionLost).
//
// Probing every broker each 400 ms was most of an idle cluster's NATS
// messages (a request and its reply each, from the controller to every
// broker and from each candidate to the holder). So the prober keeps a
// tripwire to each broker it watches: an idle connection to its Kafka
// address, on which nothing is ever sent. While a tripwire is up, its
// broker is not probed: the process holds the other end, and when the
// process dies its kernel closes it, which ends the tripwire at once and
// starts a probe round. A broker without a tripwire (its address did not
// accept one, or it ended) is probed each round, as before, and a new
// tripwire tried at most once a round. A tripwire ended by anything else
// (the listener's idle timeout, a restart) only costs a probe. What a
// tripwire cannot see, a paused process or a host cut off, needs the
// session timeout either way.

const (
	livenessInterval = 400 * time.Millisecond
	livenessMisses   = 1
	livenessTimeout  = 500 * time.Millisecond
)

// LivenessSubject is the core NATS subject a registered broker answers on
// (Store.ClusterID, the broker's id, Store.Incarnation). The incarnation
// makes it one process's: a restarted broker answers on another.
func LivenessSubject(clusterID string, id int32, incarnation string) string {
	return "shale.liveness." + clusterID + "." + strconv.Itoa(int(id)) + "." + incarnation
}

// subscribeLiveness makes this store answer on its registration's liveness
// subject, before the registration is written, so that no probe finds the
// key without the responder. REQUIRES: s.reg held.
func (s *Store) subscribeLiveness(id int32) error {
	if s.reg.liveness != nil {
		return nil
	}
	sub, err := s.nc.Subscribe(LivenessSubject(s.clusterID, id, s.incarnation), func(m *nats.Msg) { _ = m.Respond(nil) })
	if err != nil {
		return fmt.Errorf("controlplane: liveness subscription: %w", err)
	}
	if err := s.nc.FlushTimeout(5 * time.Second); err != nil {
		_ = sub.Unsubscribe()
		return fmt.Errorf("controlplane: liveness subscription: %w", err)
	}
	s.reg.liveness = sub
	return nil
}

// unsubscribeLiveness stops answering probes. REQUIRES: s.reg held.
func (s *Store) unsubscribeLiveness() {
	if s.reg.liveness != nil {
		_ = s.reg.liveness.Unsubscribe()
		s.reg.liveness = nil
	}
}

// session is one live broker key as the cache holds it.
type session struct {
	broker      Broker
	incarnation string
	rev         uint64
}

// sessions returns the live broker keys from the cache.
func (s *Store) sessions() []session {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]session, 0, len(s.mu.c.brokers))
	for _, e := range s.mu.c.brokers {
		if !e.deleted {
			out = append(out, session{broker: e.val.broker(), incarnation: e.val.Incarnation, rev: e.rev})
		}
	}
	return out
}

// probeGone asks r's liveness subject and reports whether NATS answered
// that nobody listens there (the process's connection is gone). A reply,
// a timeout or any other error is not proof.
func (s *Store) probeGone(ctx context.Context, r session) bool {
	pctx, cancel := context.WithTimeout(ctx, livenessTimeout)
	defer cancel()
	_, err := s.nc.RequestWithContext(pctx, LivenessSubject(s.clusterID, r.broker.NodeID, r.incarnation), nil)
	return errors.Is(err, nats.ErrNoResponders)
}

// listenerRefused reports whether b's Kafka address refuses a TCP
// connection: nothing listens there (a timeout is not proof).
func listenerRefused(ctx context.Context, b Broker) bool {
	d := net.Dialer{Timeout: livenessTimeout}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// removeSession deletes r's key if it is still at r's revision, as if it
// had expired.
func (s *Store) removeSession(ctx context.Context, r session) error {
	key := brokerKey(r.broker.NodeID)
	rev, err := kvDelete(ctx, s.js, BucketBrokers, key, r.rev)
	if err != nil {
		return err
	}
	s.apply((*cache).applyBroker, change{key: key, rev: rev, deleted: true})
	return nil
}

// probeLoop is the controller's liveness prober (see above): as the
// controller it removes the sessions of dead broker processes; as a
// candidate it removes the lease of a dead holder. It runs until ctx ends.
func (c *Controller) probeLoop(ctx context.Context) {
	t := time.NewTicker(livenessInterval)
	defer t.Stop()
	misses := map[string]int{} // by node id and incarnation
	trips := map[string]*tripwire{}
	defer func() {
		for _, tw := range trips {
			tw.cancel()
		}
	}()
	wake := make(chan struct{}, 1)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wake:
		}
		leading, holder := c.leading.Load(), c.holder.Load()
		seen := map[string]bool{}
		if leading {
			c.probeGraced(ctx, misses, seen)
		}
		for _, r := range c.store.sessions() {
			id := r.broker.NodeID
			if id == c.cfg.NodeID || (!leading && id != holder) {
				continue
			}
			k := strconv.Itoa(int(id)) + "/" + r.incarnation
			seen[k] = true
			tw := trips[k]
			if tw.up() {
				continue // the process holds its end
			}
			c.probes.Add(1)
			if !c.store.probeGone(ctx, r) {
				delete(misses, k)
				if tw.retry(time.Now()) {
					trips[k] = c.armTripwire(ctx, r.broker, wake)
				}
				continue
			}
			if misses[k]++; misses[k] < livenessMisses || !listenerRefused(ctx, r.broker) {
				continue
			}
			delete(misses, k)
			fctx, cancel := context.WithTimeout(ctx, c.cfg.LeaseTTL/2)
			var err error
			if leading {
				err = c.store.removeSession(fctx, r)
			} else {
				err = c.removeLease(fctx, id)
			}
			cancel()
			switch {
			case err != nil:
				c.log.Debug("removing a dead broker's session or lease", "broker", id, "err", err)
			case leading:
				c.grace.revoke(id) // proven gone: no session grace either
				c.log.Info("broker process gone (no NATS connection, Kafka port refused); session removed, broker fenced", "broker", id)
			default:
				c.log.Info("controller process gone (no NATS connection, Kafka port refused); lease removed", "broker", id)
				c.Poke()
			}
		}
		for k := range misses {
			if !seen[k] {
				delete(misses, k)
			}
		}
		for k, tw := range trips {
			if !seen[k] {
				tw.cancel()
				delete(trips, k)
			}
		}
	}
}

// tripwire is an idle connection to a probed broker's Kafka address (see
// above). A nil tripwire is none.
type tripwire struct {
	cancel context.CancelFunc
	armed  atomic.Bool   // connected, and the connection has not ended
	ended  chan struct{} // closed when the dial failed or the connection ended
	at     time.Time     // when it was tried
}

// up reports whether tw is connected and its connection has not ended.
func (tw *tripwire) up() bool { return tw != nil && tw.armed.Load() }

// retry reports whether a new tripwire should replace tw at now: there is
// none, or its dial failed or its connection ended, at least a probe
// interval after tw was tried (a peer that accepts and closes at once, as a
// listener over its connection limit does, gets a probe and a new tripwire
// a round, not a storm of them). A dial is bounded by livenessTimeout.
func (tw *tripwire) retry(now time.Time) bool {
	if tw == nil {
		return true
	}
	select {
	case <-tw.ended:
		return now.Sub(tw.at) >= livenessInterval
	default:
		return false
	}
}

// armTripwire dials b's Kafka address and, once connected, waits on the
// connection until it ends or ctx does; a connection that ends after it
// was up wakes the prober (a dial that fails does not: the prober's next
// round sees it, so a refusing address is tried once a round).
func (c *Controller) armTripwire(ctx context.Context, b Broker, wake chan<- struct{}) *tripwire {
	tctx, cancel := context.WithCancel(ctx)
	tw := &tripwire{cancel: cancel, ended: make(chan struct{}), at: time.Now()}
	dial := c.cfg.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	addr := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	go func() {
		defer close(tw.ended)
		dctx, dcancel := context.WithTimeout(tctx, livenessTimeout)
		conn, err := dial(dctx, "tcp", addr)
		dcancel()
		if err != nil {
			return
		}
		defer conn.Close()
		stop := context.AfterFunc(tctx, func() { conn.Close() })
		defer stop()
		tw.armed.Store(true)
		var buf [1]byte
		_, _ = conn.Read(buf[:]) // nothing is sent: any return is the end of it
		tw.armed.Store(false)
		if tctx.Err() == nil {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}()
	return tw
}

// removeLease deletes the controller lease if node holder still holds it.
func (c *Controller) removeLease(ctx context.Context, holder int32) error {
	e, err := c.kv.Get(ctx, ControllerLeaseKey)
	if err != nil {
		return err
	}
	if string(e.Value()) != strconv.Itoa(int(holder)) {
		return nil
	}
	return c.kv.Delete(ctx, ControllerLeaseKey, jetstream.LastRevision(e.Revision()))
}

// probeGraced probes the brokers within the session grace (grace.go) that
// have no session key: a broker whose process died while the control
// plane was away is taken for dead on the same proof as above, without
// waiting for the grace to end. misses and seen are probeLoop's.
func (c *Controller) probeGraced(ctx context.Context, misses map[string]int, seen map[string]bool) {
	ids := c.grace.grantedIDs(time.Now())
	if len(ids) == 0 {
		return
	}
	for _, r := range c.store.Registrations() {
		id := r.Broker.NodeID
		if id == c.cfg.NodeID || !r.Fenced || !slices.Contains(ids, id) {
			continue // not graced, or live by its own key (probed as a session)
		}
		k := "graced/" + strconv.Itoa(int(id)) + "/" + r.Incarnation
		seen[k] = true
		if !c.store.probeGone(ctx, session{broker: r.Broker, incarnation: r.Incarnation}) {
			delete(misses, k)
			continue
		}
		if misses[k]++; misses[k] < livenessMisses || !listenerRefused(ctx, r.Broker) {
			continue
		}
		delete(misses, k)
		c.grace.revoke(id)
		c.log.Info("broker process gone (no NATS connection, Kafka port refused); its session grace ends", "broker", id)
		c.Poke()
	}
}
