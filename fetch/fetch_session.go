package fetch

import "github.com/twmb/franz-go/pkg/kmsg"

// WithSessionCache serves incremental fetch sessions (KIP-227) from c, one
// cache per node shared by every listener. Without it every fetch is
// answered without a session.
func WithSessionCache(c *SessionCache) Option {
	return func(o *options) { o.sessions = c }
}

// sessionContext decides how the fetch r, of version v, uses sessions: its
// partitions in request order, and the cache's decision (session_cache.go).
// Fetches before v7 have no session fields and are sessionless.
func (h *fetchHandler) sessionContext(v int16, r *kmsg.FetchRequest) *fetchContext {
	n := 0
	for _, t := range r.Topics {
		n += len(t.Partitions)
	}
	parts := make([]partReq, 0, n)
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, partReq{tp: tp{t.Topic, p.Partition}, reqData: reqData{
				fetchOffset: p.FetchOffset, logStartOffset: p.LogStartOffset, maxBytes: p.PartitionMaxBytes,
				currentLeaderEpoch: p.CurrentLeaderEpoch, lastFetchedEpoch: p.LastFetchedEpoch}})
		}
	}
	if v < 7 {
		return &fetchContext{kind: sessionless, parts: parts}
	}
	var forgotten []tp
	for _, t := range r.ForgottenTopics {
		for _, p := range t.Partitions {
			forgotten = append(forgotten, tp{t.Topic, p})
		}
	}
	return h.opts.sessions.newContext(r.SessionID, r.SessionEpoch, parts, forgotten, r.ReplicaID >= 0)
}
