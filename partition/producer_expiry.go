package partition

import "time"

// Producer id expiry (Kafka's producer.id.expiration.ms, KIP-854): each
// replica, leader or follower, forgets on its own the idempotent and
// transactional producers that have written nothing to the partition for
// the expiration and have no transaction open here, so that a partition
// written by many short-lived producers does not keep every producer id in
// memory and in every snapshot. The broker calls ExpireProducers every
// producer.id.expiration.check.interval.ms; a rebuild of producer state from
// a snapshot and the log applies it at once (Kafka's loadProducerState), so
// that a restart does not bring back a producer expired before it.

// ExpireProducers forgets the producers expired at now and returns how
// many. The snapshots written after it (at a roll, at Close) leave them
// out. It does nothing when Options.ProducerIDExpiration is 0.
func (r *Replica) ExpireProducers(now time.Time) int {
	if r.pidExpiration <= 0 {
		return 0
	}
	r.appendMu.Lock()
	defer r.appendMu.Unlock()
	return r.producers.RemoveExpired(now.UnixMilli(), r.pidExpiration.Milliseconds())
}

// removeExpired forgets the producers of ps expired at the replica's clock,
// ps being producer state just rebuilt. REQUIRES: appendMu held, or ps not
// yet the replica's.
func (r *Replica) removeExpired(ps *ProducerState) {
	if r.pidExpiration > 0 {
		ps.RemoveExpired(r.now().UnixMilli(), r.pidExpiration.Milliseconds())
	}
}
