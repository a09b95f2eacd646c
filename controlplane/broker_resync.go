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
// broker for ever. It runs every BrokerTTL until Close.
func (s *Store) resyncBrokers() {
	t := time.NewTicker(s.cfg.BrokerTTL)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.BrokerTTL)
		s.sweepBrokers(ctx)
		cancel()
	}
}

// sweepBrokers reads the stream's last revision first, then the live keys:
// a key missing from the list is gone at that revision, and a registration
// written after it carries a higher revision, so it wins in the cache.
func (s *Store) sweepBrokers(ctx context.Context) {
	st, err := s.brokersKV.Status(ctx)
	if err != nil {
		return
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return
	}
	last := bs.StreamInfo().State.LastSeq
	lister, err := s.brokersKV.ListKeys(ctx)
	if err != nil {
		return
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
}
