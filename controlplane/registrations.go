package controlplane

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
)

// Broker registrations outlive sessions, as in Kafka's KRaft controller
// (ClusterControlManager): a broker that registered once stays registered
// while it is down, fenced, until an operator unregisters it
// (UnregisterBroker, KIP-631). Two buckets hold the two facts:
//
//   - shale_brokers is the session: a key per live broker process, kept
//     alive by its keepalive, gone when the process dies (expiry, or the
//     controller's liveness probe) or stops cleanly. Only a broker with a
//     session is live: it alone leads, counts in an ISR and is listed by
//     Metadata and DescribeCluster (Store.Brokers).
//   - shale_broker_registrations is the registration: a key per broker id
//     that ever registered, with its last known endpoints and rack, the
//     incarnation of the process that wrote it and, as its revision, the
//     broker epoch. The broker writes it when it registers; nothing expires
//     it.
//
// A registered broker without a session is fenced. Replica placement by
// hand (AlterPartitionReassignments, CreateTopics and CreatePartitions with
// assignments) accepts any registered broker, fenced or not, and refuses an
// id that never registered, as Kafka does: a replica placed on a fenced
// broker starts fetching when the broker comes back, and joins the ISR
// only by the leader's catch-up rule.

// BucketBrokerRegistrations holds the durable broker registrations, one key
// per broker id ("<node id>"), without a TTL.
const BucketBrokerRegistrations = "shale_broker_registrations"

// Registration is one registered broker as Store.Registrations reports it.
type Registration struct {
	// Broker is the broker's id and last known endpoints and rack (its live
	// session's when it has one).
	Broker Broker
	// Incarnation is that of the process that last registered the id.
	Incarnation string
	// Epoch is the broker epoch: the revision of the registration's last
	// write, bumped each time a process registers the id. 0 for a live
	// broker whose registration is not written yet.
	Epoch uint64
	// Fenced: the broker has no live session. It does not lead, is not in
	// any ISR, and is not listed as a live broker.
	Fenced bool
}

type registrationRecord struct {
	NodeID      int32  `json:"node_id"`
	Host        string `json:"host"`
	Port        int32  `json:"port"`
	Rack        string `json:"rack,omitempty"`
	Listeners   string `json:"listeners,omitempty"`
	Incarnation string `json:"incarnation"`
}

func (r registrationRecord) broker() Broker {
	return Broker{NodeID: r.NodeID, Host: r.Host, Port: r.Port, Rack: r.Rack, Listeners: r.Listeners}
}

func encodeRegistration(b Broker, incarnation string) []byte {
	return mustJSON(registrationRecord{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack,
		Listeners: b.Listeners, Incarnation: incarnation})
}

// applyRegistration applies a change to the registration bucket. It emits
// no event: a registration changes nothing any node acts on by itself.
func (c *cache) applyRegistration(log *slog.Logger, ch change) []Event {
	id, err := parseBrokerKey(ch.key)
	if err != nil {
		log.Warn("ignoring broker registration key", "key", ch.key, "err", err)
		return nil
	}
	if cur := c.registrations[id]; cur != nil && ch.rev <= cur.rev {
		return nil
	}
	if ch.deleted {
		c.registrations[id] = &entry[registrationRecord]{rev: ch.rev, deleted: true}
		return nil
	}
	var r registrationRecord
	if err := json.Unmarshal(ch.value, &r); err != nil {
		log.Warn("ignoring broker registration", "key", ch.key, "err", err)
		return nil
	}
	c.registrations[id] = &entry[registrationRecord]{val: r, rev: ch.rev}
	return nil
}

// putRegistration writes this process's registration of b unless the
// cache already holds it as it is. REQUIRES: s.reg held and this store's
// session for b written (putBroker), so that a second process claiming
// b.NodeID, refused there, never overwrites the first one's registration.
func (s *Store) putRegistration(ctx context.Context, b Broker) error {
	want := registrationRecord{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack,
		Listeners: b.Listeners, Incarnation: s.incarnation}
	s.mu.RLock()
	e := s.mu.c.registrations[b.NodeID]
	s.mu.RUnlock()
	if e != nil && !e.deleted && e.val == want {
		return nil
	}
	key := brokerKey(b.NodeID)
	data := encodeRegistration(b, s.incarnation)
	rev, err := s.registrationsKV.Put(ctx, key, data)
	if err != nil {
		return fmt.Errorf("controlplane: write broker %d's registration: %w", b.NodeID, err)
	}
	s.apply((*cache).applyRegistration, change{key: key, rev: rev, value: data})
	return nil
}

// Registrations returns every registered broker, fenced or not, sorted by
// node id: those with a registration record, and any live broker whose
// record is not written yet (a broker registering right now, or one that
// registered before registrations were kept). The caller owns the slice.
func (s *Store) Registrations() []Registration {
	s.mu.RLock()
	defer s.mu.RUnlock()
	byID := map[int32]Registration{}
	for id, e := range s.mu.c.registrations {
		if !e.deleted {
			byID[id] = Registration{Broker: e.val.broker(), Incarnation: e.val.Incarnation, Epoch: e.rev, Fenced: true}
		}
	}
	for id, e := range s.mu.c.brokers {
		if e.deleted {
			continue
		}
		r := byID[id]
		r.Broker, r.Fenced = e.val.broker(), false
		if r.Incarnation != e.val.Incarnation {
			r.Incarnation, r.Epoch = e.val.Incarnation, 0
		}
		byID[id] = r
	}
	out := make([]Registration, 0, len(byID))
	for _, r := range byID {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Registration) int { return cmp.Compare(a.Broker.NodeID, b.Broker.NodeID) })
	return out
}

// Registered reports whether broker id is registered, fenced or not: the
// membership test of a replica placed by hand.
func (s *Store) Registered(id int32) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if e := s.mu.c.registrations[id]; e != nil && !e.deleted {
		return true
	}
	e := s.mu.c.brokers[id]
	return e != nil && !e.deleted
}

// Live reports whether broker id has a live session (it is registered and
// not fenced).
func (s *Store) Live(id int32) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.mu.c.brokers[id]
	return e != nil && !e.deleted
}

// UnregisterBroker removes broker id's registration for good (Kafka's
// UnregisterBroker, for a decommissioned broker): the id is then unknown,
// and placing a replica on it is refused. Partition records that still
// name it are left as they are; move them off it with a reassignment.
//
// It fails with ErrBrokerNotRegistered when id is not registered, and with
// ErrBrokerNotFenced while id has a live session: stop the broker first (a
// broker that registers again afterwards, under the same id, is a new
// registration). The delete is compare-and-set on the registration's
// revision, so a broker that registers at the same moment wins.
func (s *Store) UnregisterBroker(ctx context.Context, id int32) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if s.Live(id) {
		return fmt.Errorf("%w: broker %d has a live session; stop it before unregistering it", ErrBrokerNotFenced, id)
	}
	s.mu.RLock()
	e := s.mu.c.registrations[id]
	s.mu.RUnlock()
	if e == nil || e.deleted {
		return fmt.Errorf("%w: broker %d", ErrBrokerNotRegistered, id)
	}
	key := brokerKey(id)
	rev, err := kvDelete(ctx, s.js, BucketBrokerRegistrations, key, e.rev)
	if err != nil {
		return err
	}
	s.apply((*cache).applyRegistration, change{key: key, rev: rev, deleted: true})
	s.log.Info("broker unregistered", "broker", id, "epoch", e.rev)
	return nil
}

// registrationsBucketConfig is the registration bucket: no TTL, the
// replicas of the other metadata buckets.
func registrationsBucketConfig(replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: BucketBrokerRegistrations,
		Description: "Shale broker registrations (kept while a broker is fenced)", Replicas: replicas}
}
