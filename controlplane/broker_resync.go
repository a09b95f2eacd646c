package controlplane

import (
	"context"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// resyncBrokers drops from the cache every broker whose key is no longer in
// the bucket. A registration that expires leaves only a MaxAge marker,
// which itself lives LimitMarkerTTL; a watcher that was cut off from NATS
// for longer never sees it, and without this sweep would list the dead
// broker for ever. A sweep lists the bucket (a consumer made and deleted:
// a handful of NATS messages). On a NATS cluster it runs every BrokerTTL:
// there a server cut from its cluster, or a stream leader lost, can keep a
// watcher from an expiry while its connection stays up (the nodes cut from
// the lost leader's server see the broker expire through this sweep). On a
// single server, where a watcher is cut off only with its connection, it
// runs at the first tick after the connection came back or a watch was
// re-established, and otherwise every resyncGuard ticks. It runs until
// Close.
func (s *Store) resyncBrokers() {
	t := time.NewTicker(s.cfg.BrokerTTL)
	defer t.Stop()
	var seen uint64 // the monitor's reconnections and watch restarts at the last sweep
	ticks := 0
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		st := s.cfg.Monitor.Stats()
		n := st.Reconnects + st.WatchRestarts
		if ticks++; n == seen && ticks < resyncGuard && s.nc.ConnectedClusterName() == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.BrokerTTL)
		if s.sweepBrokers(ctx) {
			seen, ticks = n, 0
		}
		cancel()
	}
}

// resyncGuard is how many BrokerTTL ticks may pass without a broker sweep
// while nothing says a watcher was cut off (resyncBrokers).
const resyncGuard = 5

// sweepBrokers reads the stream's last revision first, then the live keys:
// a key missing from the list is gone at that revision, and a registration
// written after it carries a higher revision, so it wins in the cache. It
// reports whether it read the bucket.
func (s *Store) sweepBrokers(ctx context.Context) bool {
	st, err := s.brokersKV.Status(ctx)
	if err != nil {
		return false
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return false
	}
	last := bs.StreamInfo().State.LastSeq
	lister, err := s.brokersKV.ListKeys(ctx)
	if err != nil {
		return false
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	for _, b := range s.Brokers() {
		if k := brokerKey(b.NodeID); !slices.Contains(keys, k) {
			s.apply((*cache).applyBroker, change{key: k, rev: last, deleted: true})
		}
	}
	return true
}
