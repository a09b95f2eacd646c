package group

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment/batch"
)

// shard is one __consumer_offsets partition this node leads in one leader
// epoch (a coordinator.Shard): the replica and its groups. partition,
// replica and epoch never change; mu guards the groups.
type shard struct {
	c         *Coordinator
	partition int32
	replica   *partition.Replica
	epoch     int32 // the leader epoch the shard was loaded in

	loaded  map[string]*loadedGroup // what Load read, until Activate
	skipped int
	start   time.Time

	mu struct {
		sync.Mutex
		unloaded bool // replaced or closed
		groups   map[string]*runner
	}

	sinceCompact atomic.Int64 // records appended since the last compaction
	compacting   atomic.Bool
	txnAppend    sync.Mutex // serialises transactional appends (appendTxn)
}

// loadedGroup is what reading a partition leaves of one group.
type loadedGroup struct {
	meta    *kmsg.GroupMetadataValue // nil: no live metadata record
	offsets map[topicPartition]offsetEntry
	// pendingTxn: transactional offsets whose marker is not in the log
	// (yet), per producer id.
	pendingTxn map[int64]map[topicPartition]offsetEntry
	consumer   *loadedConsumer   // nil: no consumer group record
	share      map[string][]byte // live share group records, key -> value
}

// readPartition replays rep from its log start to its log end and returns
// the live state per group: the last record per key wins, a tombstone
// deletes. It reads to the log end, not the high watermark, as Kafka's
// coordinator does: on a leader just elected the high watermark lags the
// log end (it learns the old leader's from fetch responses), while
// everything up to the log end is its to commit; loading less would bring
// committed offsets and generations back, and the next compaction would
// make that permanent. A record above the high watermark that is never
// committed is lost only with this leadership, and the shard with it. Records that do not decode (written by something else
// than a coordinator: the topic is writable) are skipped and counted in
// skipped; an unreadable log is an error.
func readPartition(rep *partition.Replica) (groups map[string]*loadedGroup, skipped int, err error) {
	groups = map[string]*loadedGroup{}
	get := func(id string) *loadedGroup {
		lg := groups[id]
		if lg == nil {
			lg = &loadedGroup{offsets: map[topicPartition]offsetEntry{}, pendingTxn: map[int64]map[topicPartition]offsetEntry{}}
			groups[id] = lg
		}
		return lg
	}
	// txnGroups: per producer id, the groups with offsets of its open
	// transaction, which its marker applies or drops.
	txnGroups := map[int64]map[string]bool{}
	err = coordinator.Replay(rep, OffsetsTopic, func(h *batch.Header, one []byte) error {
		if h.Control() {
			m, ok, err := batch.ParseEndTxnMarker(one)
			if err != nil || !ok {
				return nil // not a transaction marker: nothing of a group's
			}
			for id := range txnGroups[h.ProducerID] {
				lg := groups[id]
				if pend := lg.pendingTxn[h.ProducerID]; m.Commit {
					for tp, e := range pend {
						// A commit appended after the transaction's
						// offset wins, as in Kafka.
						if cur, ok := lg.offsets[tp]; !ok || cur.logOffset < e.logOffset {
							lg.offsets[tp] = e
						}
					}
				}
				delete(lg.pendingTxn, h.ProducerID)
			}
			delete(txnGroups, h.ProducerID)
			return nil
		}
		return batch.ForEachRecord(one, 64<<20, func(r *batch.Record) error {
			k, err := decodeKey(r.Key)
			if err != nil {
				skipped++
				return nil
			}
			lg := get(k.group)
			switch {
			case k.kind == kindOffset && h.Transactional():
				e, err := decodeOffsetValue(r.Value)
				if err != nil {
					skipped++
					return nil
				}
				e.logOffset = h.BaseOffset + int64(r.OffsetDelta)
				pend := lg.pendingTxn[h.ProducerID]
				if pend == nil {
					pend = map[topicPartition]offsetEntry{}
					lg.pendingTxn[h.ProducerID] = pend
				}
				pend[k.tp] = e
				if txnGroups[h.ProducerID] == nil {
					txnGroups[h.ProducerID] = map[string]bool{}
				}
				txnGroups[h.ProducerID][k.group] = true
			case k.kind == kindOffset && r.Value == nil:
				// A tombstone drops the partition's pending
				// transactional offsets too (group.forgetOffset).
				delete(lg.offsets, k.tp)
				for pid, pend := range lg.pendingTxn {
					delete(pend, k.tp)
					if len(pend) == 0 {
						delete(lg.pendingTxn, pid)
					}
				}
			case k.kind == kindOffset:
				e, err := decodeOffsetValue(r.Value)
				if err != nil {
					skipped++
					return nil
				}
				e.logOffset = h.BaseOffset + int64(r.OffsetDelta)
				lg.offsets[k.tp] = e
			case k.kind == kindShare && r.Value == nil:
				delete(lg.share, string(r.Key))
			case k.kind == kindShare:
				if lg.share == nil {
					lg.share = map[string][]byte{}
				}
				lg.share[string(r.Key)] = r.Value
			case k.kind >= kindConsumerGroupMetadata:
				if lg.consumer == nil {
					lg.consumer = newLoadedConsumer()
				}
				if err := lg.consumer.apply(k, r.Value); err != nil {
					skipped++
				}
			case r.Value == nil:
				lg.meta = nil
			default:
				v, err := decodeGroupValue(r.Value)
				if err != nil {
					skipped++
					return nil
				}
				lg.meta = v
			}
			return nil
		})
	})
	if err != nil {
		return nil, skipped, err
	}
	for id, lg := range groups {
		if lg.consumer != nil && !lg.consumer.exists {
			lg.consumer = nil
		}
		if lg.meta == nil && len(lg.offsets) == 0 && len(lg.pendingTxn) == 0 && lg.consumer == nil && len(lg.share) == 0 {
			delete(groups, id)
		}
	}
	return groups, skipped, nil
}

// restore turns a loaded group into a live one at now: members are back
// with their assignments and a fresh session, so that those still alive
// keep heartbeating and the others expire.
func restore(g *group, lg *loadedGroup, now time.Time) {
	g.now = now
	g.offsets = lg.offsets
	g.pendingTxn = lg.pendingTxn
	g.share = lg.share
	if lg.consumer != nil {
		g.consumer = lg.consumer.restore(now, g.limits, g.id)
	}
	v := lg.meta
	if v == nil {
		g.setState(StateEmpty)
		return
	}
	g.protocolType, g.generation = v.ProtocolType, v.Generation
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	for _, vm := range v.Members {
		m := &member{
			id: vm.MemberID, instanceID: vm.InstanceID, clientID: vm.ClientID, clientHost: vm.ClientHost,
			rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
			sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
			protocols:        []protocol{{name: g.protocol, metadata: append([]byte(nil), vm.Subscription...)}},
			assignment:       append([]byte(nil), vm.Assignment...),
		}
		if m.rebalanceTimeout <= 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		g.members[m.id] = m
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
		g.touch(m)
	}
	if len(g.members) == 0 {
		g.protocol, g.leader = "", ""
		g.setState(StateEmpty)
	} else {
		g.setState(StateStable)
	}
	// When the group entered its state, as Kafka's ClassicGroup
	// .fromRecord keeps it: an Empty group's offsets expire counted from
	// then (offset_expiry.go), not from this load; a record without one
	// (-1, an older writer) leaves them to count from their commits.
	g.stateSince = time.Time{}
	if v.CurrentStateTimestamp > 0 {
		g.stateSince = time.UnixMilli(v.CurrentStateTimestamp)
	}
}

// Load reads sh's partition (coordinator.Shard).
func (sh *shard) Load() error {
	sh.start = time.Now()
	groups, skipped, err := readPartition(sh.replica)
	if err != nil {
		return err
	}
	sh.loaded, sh.skipped = groups, skipped
	return nil
}

// Activate starts the groups Load read (coordinator.Shard).
func (sh *shard) Activate() {
	c := sh.c
	now := c.cfg.Now()
	shares := map[string][]ShareRecord{}
	// Offsets of topics deleted while no node had this partition loaded
	// are deleted by each group's first event, before any request
	// (deleted_topics.go).
	gone := c.deletedAtLoad()
	sh.mu.Lock()
	for id, lg := range sh.loaded {
		g := newGroup(id, &c.cfg, nil)
		stale := gone != nil && lg.hasMatch(gone)
		restore(g, lg, now)
		if len(g.share) > 0 {
			for _, r := range g.shareRecords() {
				shares[id] = append(shares[id], ShareRecord{Key: r.key, Value: r.value})
			}
		}
		r := c.startRunnerLocked(sh, g)
		if stale {
			r.submitFirst(func(g *group) { g.dropTopicOffsets(gone, "topic gone at load") })
		}
	}
	sh.mu.Unlock()
	if sg := c.shareGroups(); sg != nil {
		// Before the shard serves requests: a share group heartbeat finds
		// its group (ShareReady is nil from now on).
		sg.LoadShareGroups(sh.partition, shares)
	}
	n := len(sh.loaded)
	sh.loaded = nil
	if sh.skipped > 0 {
		c.log.Warn("skipped records that do not decode", "partition", sh.partition, "records", sh.skipped)
	}
	c.log.Info("loaded groups", "partition", sh.partition, "groups", n, "took", time.Since(sh.start))
}
