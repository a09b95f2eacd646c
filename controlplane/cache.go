package controlplane

import (
	"log/slog"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
)

// cache is a Store's in-memory copy of the buckets. Both the KV watchers and
// the Store's own writes apply changes to it; each key remembers the revision
// it was last set at, and an older revision is ignored, so a watcher that
// delivers a change after the write that produced it changes nothing.
// Deleted keys stay as tombstones for the same reason.
//
// The cache is guarded by Store.mu; every method REQUIRES Store.mu held for
// writing, except the lookups noted.
type cache struct {
	brokers map[int32]*entry[brokerRecord] // live sessions
	// registrations are the durable broker registrations (registrations.go).
	registrations map[int32]*entry[registrationRecord]
	topics        map[string]*entry[Topic] // by name
	topicNames    map[TopicID]string       // live topics only
	partitions    map[TopicID]map[int32]*entry[PartitionState]
}

type entry[T any] struct {
	val     T
	rev     uint64
	deleted bool
}

// appendLive appends to out, through val, the value of each entry of m
// that is not deleted, in map order (the caller sorts). val makes what the
// caller owns (a clone, or the public form of a record).
func appendLive[K comparable, V, T any](out []T, m map[K]*entry[V], val func(V) T) []T {
	for _, e := range m {
		if !e.deleted {
			out = append(out, val(e.val))
		}
	}
	return out
}

func newCache() cache {
	return cache{
		brokers:       map[int32]*entry[brokerRecord]{},
		registrations: map[int32]*entry[registrationRecord]{},
		topics:        map[string]*entry[Topic]{},
		topicNames:    map[TopicID]string{},
		partitions:    map[TopicID]map[int32]*entry[PartitionState]{},
	}
}

// change is one KV change, from a watcher or a write result.
type change struct {
	key     string
	rev     uint64
	deleted bool
	value   []byte
	// part is a partition record's value decoded before the Store's lock
	// is taken (decodeAhead): at 10,000 partitions the elections' writes,
	// decoded under the lock, held up every reader and writer of the
	// cache (issue 23). Nil: applyPartition decodes it.
	part *decodedPartition
}

// decodedPartition is a partition record decoded, and the clone of it
// that its event carries.
type decodedPartition struct {
	st, ev PartitionState
	err    error
}

// decodeAhead decodes a partition change's value, to be applied under the
// Store's lock without decoding there.
func decodeAhead(ch change) change {
	if ch.deleted || ch.part != nil {
		return ch
	}
	d := &decodedPartition{}
	if d.st, d.err = decodePartition(ch.value, ch.rev); d.err == nil {
		d.ev = d.st.clone()
	}
	ch.part = d
	return ch
}

func changeFromEntry(e jetstream.KeyValueEntry) change {
	op := e.Operation()
	return change{key: e.Key(), rev: e.Revision(), deleted: op == jetstream.KeyValueDelete || op == jetstream.KeyValuePurge, value: e.Value()}
}

// applyBroker applies a change to the broker registry and returns the
// resulting events.
func (c *cache) applyBroker(log *slog.Logger, ch change) []Event {
	id, err := parseBrokerKey(ch.key)
	if err != nil {
		log.Warn("ignoring broker key", "key", ch.key, "err", err)
		return nil
	}
	cur := c.brokers[id]
	if cur != nil && ch.rev <= cur.rev {
		return nil
	}
	if ch.deleted {
		if cur == nil || cur.deleted {
			c.brokers[id] = &entry[brokerRecord]{rev: ch.rev, deleted: true}
			return nil
		}
		c.brokers[id] = &entry[brokerRecord]{val: cur.val, rev: ch.rev, deleted: true}
		return []Event{{Kind: BrokerDown, Broker: cur.val.broker()}}
	}
	rec, err := decodeBroker(ch.value)
	if err != nil {
		log.Warn("ignoring broker value", "key", ch.key, "err", err)
		return nil
	}
	c.brokers[id] = &entry[brokerRecord]{val: rec, rev: ch.rev}
	if cur == nil || cur.deleted || cur.val.broker() != rec.broker() || cur.val.Incarnation != rec.Incarnation ||
		cur.val.LogsReported != rec.LogsReported || !slices.Equal(cur.val.Logs, rec.Logs) ||
		!slices.Equal(cur.val.Offline, rec.Offline) {
		return []Event{{Kind: BrokerUp, Broker: rec.broker()}}
	}
	return nil // a keepalive
}

func (r brokerRecord) broker() Broker {
	return Broker{NodeID: r.NodeID, Host: r.Host, Port: r.Port, Rack: r.Rack, UncleanStart: r.UncleanStart,
		ControlledShutdown: r.Shutdown, Listeners: r.Listeners}
}

func (c *cache) applyTopic(log *slog.Logger, ch change) []Event {
	name := topicFromKey(ch.key)
	cur := c.topics[name]
	if cur != nil && ch.rev <= cur.rev {
		return nil
	}
	if ch.deleted {
		if cur == nil || cur.deleted {
			c.topics[name] = &entry[Topic]{rev: ch.rev, deleted: true}
			return nil
		}
		c.topics[name] = &entry[Topic]{val: cur.val, rev: ch.rev, deleted: true}
		delete(c.topicNames, cur.val.ID)
		return []Event{{Kind: TopicDeleted, Topic: cur.val.clone()}}
	}
	t, err := decodeTopic(ch.value)
	if err != nil {
		log.Warn("ignoring topic value", "key", ch.key, "err", err)
		return nil
	}
	c.topics[name] = &entry[Topic]{val: t, rev: ch.rev}
	var evs []Event
	if cur != nil && !cur.deleted && cur.val.ID != t.ID {
		// The watcher missed a delete between two incarnations of the name.
		delete(c.topicNames, cur.val.ID)
		evs = append(evs, Event{Kind: TopicDeleted, Topic: cur.val.clone()})
	}
	c.topicNames[t.ID] = name
	if cur == nil || cur.deleted || cur.val.ID != t.ID {
		return append(evs, Event{Kind: TopicCreated, Topic: t.clone()})
	}
	return append(evs, Event{Kind: TopicChanged, Topic: t.clone()})
}

func (c *cache) applyPartition(log *slog.Logger, ch change) []Event {
	id, p, err := parsePartitionKey(ch.key)
	if err != nil {
		log.Warn("ignoring partition key", "key", ch.key, "err", err)
		return nil
	}
	parts := c.partitions[id]
	if parts == nil {
		parts = map[int32]*entry[PartitionState]{}
		c.partitions[id] = parts
	}
	cur := parts[p]
	if cur != nil && ch.rev <= cur.rev {
		return nil
	}
	if ch.deleted {
		parts[p] = &entry[PartitionState]{rev: ch.rev, deleted: true}
		if cur == nil || cur.deleted {
			return nil
		}
		parts[p].val = cur.val
		return []Event{{Kind: PartitionDeleted, Partition: cur.val.clone()}}
	}
	d := decodeAhead(ch).part // at once, when the caller did not
	if d.err != nil {
		log.Warn("ignoring partition value", "key", ch.key, "err", d.err)
		return nil
	}
	parts[p] = &entry[PartitionState]{val: d.st, rev: ch.rev}
	return []Event{{Kind: PartitionChanged, Partition: d.ev}}
}

// REQUIRES: Store.mu held (read is enough).
func (c *cache) liveTopic(name string) (*entry[Topic], bool) {
	e := c.topics[name]
	if e == nil || e.deleted {
		return nil, false
	}
	return e, true
}
