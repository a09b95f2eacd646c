package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// RegisterBroker registers b as this node's broker and keeps the
// registration alive until Close or DeregisterBroker: a goroutine owned by
// the Store refreshes the key every KeepaliveInterval, well inside
// BrokerTTL. Calling it again replaces the registered details. It fails with
// ErrBrokerIDInUse while another process's registration for b.NodeID is
// alive (a restarted broker waits for its old key to expire, as in Kafka).
// It waits at most RequestTimeout for an answer: a caller tries again while
// the error is Unavailable.
func (s *Store) RegisterBroker(ctx context.Context, b Broker) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	if b.NodeID < 0 || b.Host == "" || b.Port <= 0 {
		return fmt.Errorf("%w: %+v", ErrInvalidBroker, b)
	}
	s.reg.Lock()
	defer s.reg.Unlock()
	if s.reg.active && s.reg.broker.NodeID != b.NodeID {
		return fmt.Errorf("%w: this store already registered node %d", ErrInvalidBroker, s.reg.broker.NodeID)
	}
	if err := s.subscribeLiveness(b.NodeID); err != nil {
		return err
	}
	start := time.Now()
	rev, err := s.putBroker(ctx, b, 0)
	if err != nil {
		if !s.reg.active {
			s.unsubscribeLiveness()
		}
		return err
	}
	s.reg.active, s.reg.broker, s.reg.rev = true, b, rev
	s.setRenewed(start)
	if err := s.putRegistration(ctx, b); err != nil {
		// The session is up, and Registered counts a live broker: the
		// keepalive writes the registration at its next tick.
		s.log.Warn("broker registration not written; the keepalive retries", "err", err)
	}
	if !s.reg.started {
		s.reg.started = true
		s.wg.Go(s.keepalive)
	}
	return nil
}

// putBroker writes this store's registration for b (with s.reg.logs; the
// caller holds s.reg): compare-and-set on
// lastRev when it is known, else create, else take over a key that holds
// this store's own incarnation. It updates the cache from the result.
func (s *Store) putBroker(ctx context.Context, b Broker, lastRev uint64) (uint64, error) {
	key := brokerKey(b.NodeID)
	data := encodeBroker(b, s.incarnation, s.reg.logs, s.reg.offline)
	var rev uint64
	var err error
	if lastRev > 0 {
		rev, err = s.brokersKV.Update(ctx, key, data, lastRev)
	}
	if lastRev == 0 || isWrongLastSeq(err) {
		rev, err = s.brokersKV.Create(ctx, key, data)
		if isWrongLastSeq(err) {
			e, gerr := s.brokersKV.Get(ctx, key)
			switch {
			case isKeyGone(gerr): // expired between Create and Get
				rev, err = s.brokersKV.Create(ctx, key, data)
			case gerr != nil:
				return 0, fmt.Errorf("controlplane: read broker %d: %w", b.NodeID, gerr)
			default:
				rec, derr := decodeBroker(e.Value())
				if derr == nil && rec.Incarnation != s.incarnation {
					return 0, fmt.Errorf("%w: node %d at %s:%d", ErrBrokerIDInUse, b.NodeID, rec.Host, rec.Port)
				}
				rev, err = s.brokersKV.Update(ctx, key, data, e.Revision())
			}
		}
	}
	if err != nil {
		return 0, fmt.Errorf("controlplane: register broker %d: %w", b.NodeID, err)
	}
	s.apply((*cache).applyBroker, change{key: key, rev: rev, value: data})
	return rev, nil
}

// keepaliveRetry is how soon a failed refresh of the registration is
// tried again: a JetStream stream-leader election, or a NATS server lost
// and the client's reconnection to another one, lasts seconds, and the
// session (BrokerTTL) is what counts, not the keepalive's period.
const keepaliveRetry = 100 * time.Millisecond

// keepalive refreshes the registration until Close: every
// KeepaliveInterval, and after a failed refresh again every keepaliveRetry
// (each attempt bounded by KeepaliveInterval) until one succeeds, so that
// a renewal lands as soon as the control plane answers again. Failures
// are logged once per outage, with the outage's length at its end; losing
// the node id to another process ends the registration.
func (s *Store) keepalive() {
	var failingSince time.Time // zero while renewals succeed
	failures := 0
	wait := s.cfg.KeepaliveInterval
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = s.cfg.KeepaliveInterval
		s.reg.Lock()
		if s.reg.active {
			start := time.Now()
			ctx, cancel := context.WithTimeout(s.ctx, s.cfg.KeepaliveInterval)
			rev, err := s.putBroker(ctx, s.reg.broker, s.reg.rev)
			cancel()
			switch {
			case err == nil:
				s.reg.rev = rev
				s.setRenewed(start)
				if !failingSince.IsZero() {
					s.log.Info("broker keepalive renewed again", "failed_for", time.Since(failingSince).Round(time.Millisecond),
						"failed_attempts", failures)
					failingSince, failures = time.Time{}, 0
				}
				// Written at registration; again here if that write failed
				// or an unregistration raced with this process's start.
				ctx, cancel := context.WithTimeout(s.ctx, s.cfg.KeepaliveInterval)
				if err := s.putRegistration(ctx, s.reg.broker); err != nil && s.ctx.Err() == nil {
					s.log.Warn("writing the broker registration", "err", err)
				}
				cancel()
			case errors.Is(err, ErrBrokerIDInUse):
				s.log.Error("broker registration taken over; keepalive stopped", "err", err)
				s.reg.active = false
				s.renewed.Store(nil)
				s.unsubscribeLiveness()
			case s.ctx.Err() == nil:
				if failures++; failingSince.IsZero() {
					failingSince = start
					s.log.Warn("broker keepalive failed; retrying until the control plane answers", "err", err,
						"last_renewed_ago", time.Since(s.reg.renewedAt).Round(time.Millisecond))
				} else {
					s.log.Debug("broker keepalive failed", "err", err, "attempt", failures)
				}
				wait = keepaliveRetry
			}
		}
		s.reg.Unlock()
	}
}

// ReportReplicaLogs publishes, in this node's registration, the log ends of
// the local replicas it was a leader candidate of when it opened them after
// an unclean start (Broker.UncleanStart), and that the report is complete:
// until then the controller trusts the node with no such partition. Later
// calls replace the report (a node drops an entry once it is back in the
// partition's ISR). It fails if no broker is registered.
func (s *Store) ReportReplicaLogs(ctx context.Context, logs []ReplicaLog) error {
	return s.republish(ctx, func(*Broker) (undo func()) {
		prev := s.reg.logs
		cp := slices.Clone(logs)
		if cp == nil {
			cp = []ReplicaLog{}
		}
		s.reg.logs = &cp
		return func() { s.reg.logs = prev }
	})
}

// ReportOfflineReplicas publishes, in this node's registration, the local
// replicas it cannot serve (OfflineReplica); later calls replace the list.
// The controller treats the node as dead for exactly those partitions. It
// fails if no broker is registered.
func (s *Store) ReportOfflineReplicas(ctx context.Context, offline []OfflineReplica) error {
	return s.republish(ctx, func(*Broker) (undo func()) {
		prev := s.reg.offline
		s.reg.offline = slices.Clone(offline)
		return func() { s.reg.offline = prev }
	})
}

// BeginControlledShutdown marks this node's registration as in controlled
// shutdown (Broker.ControlledShutdown) before it hands its leaderships
// away, so that the controller's preferred-leader balancing does not give
// any back. The mark lasts until the registration ends. It fails if no
// broker is registered.
func (s *Store) BeginControlledShutdown(ctx context.Context) error {
	return s.republish(ctx, func(b *Broker) (undo func()) {
		b.ControlledShutdown = true
		return func() {}
	})
}

// republish writes this node's registration again after change has
// altered what it carries: b, the broker record written, or the reports
// in s.reg (its replica logs, its offline replicas). A failed write undoes
// the change. It fails if no broker is registered.
func (s *Store) republish(ctx context.Context, change func(b *Broker) (undo func())) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	s.reg.Lock()
	defer s.reg.Unlock()
	if !s.reg.active {
		return fmt.Errorf("%w: no broker registered", ErrInvalidBroker)
	}
	b := s.reg.broker
	undo := change(&b)
	start := time.Now()
	rev, err := s.putBroker(ctx, b, s.reg.rev)
	if err != nil {
		undo()
		return err
	}
	s.reg.broker, s.reg.rev = b, rev
	s.setRenewed(start)
	return nil
}

// OfflineReplicas returns broker id's offline replicas from the cache (see
// ReportOfflineReplicas). The caller owns the slice.
func (s *Store) OfflineReplicas(id int32) []OfflineReplica {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.mu.c.brokers[id]
	if e == nil || e.deleted {
		return nil
	}
	return e.val.offlineReplicas()
}

// Incarnation returns the incarnation of broker id's live registration: a
// random id per registering process, so a broker that registers again
// after a restart has a new one.
// OwnIncarnation is the incarnation this Store registers its broker with:
// random per Store, so per process. A partition record stamped with
// another one for this node (PartitionState.LeaderIncarnation) names the
// node's previous process as leader.
func (s *Store) OwnIncarnation() string { return s.incarnation }

func (s *Store) Incarnation(id int32) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.mu.c.brokers[id]
	if e == nil || e.deleted {
		return "", false
	}
	return e.val.Incarnation, true
}

// RegistrationRenewed returns when this node's registration was last
// written successfully (the start of that write: the key lives BrokerTTL
// from at least then), and false when no registration is being kept alive.
// It never waits for a renewal in flight.
func (s *Store) RegistrationRenewed() (time.Time, bool) {
	if t := s.renewed.Load(); t != nil {
		return *t, true
	}
	return time.Time{}, false
}

// setRenewed records a successful write of the registration sent at
// start. REQUIRES: s.reg held.
func (s *Store) setRenewed(start time.Time) {
	s.reg.renewedAt = start
	s.renewed.Store(&start)
}

// keepaliveImpaired reports whether this node keeps a registration that
// has not been renewed for longer than one and a half keepalive
// intervals at now: its renewals are failing (the brokers bucket has no
// stream leader, or NATS does not answer), as every broker's may be.
func (s *Store) keepaliveImpaired(now time.Time) bool {
	t := s.renewed.Load()
	return t != nil && now.Sub(*t) > s.cfg.KeepaliveInterval*3/2
}

// ReplicaLogs returns broker id's report of replica log ends from the cache,
// and whether it has reported (see ReportReplicaLogs). The caller owns the
// slice.
func (s *Store) ReplicaLogs(id int32) ([]ReplicaLog, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.mu.c.brokers[id]
	if e == nil || e.deleted {
		return nil, false
	}
	return e.val.replicaLogs(), e.val.LogsReported
}

// DeregisterBroker stops the keepalive and deletes this node's registration,
// for a clean shutdown: other nodes see BrokerDown at once instead of after
// BrokerTTL. It is a no-op when nothing is registered.
func (s *Store) DeregisterBroker(ctx context.Context) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	s.reg.Lock()
	defer s.reg.Unlock()
	if !s.reg.active {
		return nil
	}
	s.reg.active = false
	s.renewed.Store(nil)
	s.unsubscribeLiveness()
	key := brokerKey(s.reg.broker.NodeID)
	rev, err := kvDelete(ctx, s.js, BucketBrokers, key, s.reg.rev)
	if err != nil {
		return err
	}
	s.apply((*cache).applyBroker, change{key: key, rev: rev, deleted: true})
	return nil
}

// Brokers returns the live brokers, sorted by node id. The caller owns the
// slice.
func (s *Store) Brokers() []Broker {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := appendLive(make([]Broker, 0, len(s.mu.c.brokers)), s.mu.c.brokers, brokerRecord.broker)
	slices.SortFunc(out, func(a, b Broker) int { return cmp.Compare(a.NodeID, b.NodeID) })
	return out
}
