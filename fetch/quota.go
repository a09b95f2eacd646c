package fetch

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/quota"
)

// Quotas are the consumer byte-rate and cold-read quotas a fetch is held
// to (quota.Manager). Safe for concurrent use. Any reports whether some
// quota is configured (one atomic load); while none is, a fetch measures
// nothing. Else a fetch takes its principal's Limits once and bounds,
// checks and records against them.
type Quotas interface {
	Any() bool
	Limits(user, clientID string) (quota.Limits, bool)
	ThrottledFor(l *quota.Limits, t quota.Type, now time.Time) time.Duration
	RecordFor(l *quota.Limits, t quota.Type, value float64, now time.Time) time.Duration
}

// WithQuotas holds consumers' fetches to their consumer_byte_rate and
// shale.remote_fetch_byte_rate quotas (follower fetches are exempt).
func WithQuotas(q Quotas) Option {
	return func(o *options) { o.quotas = q }
}

// fetchQuota is the quota state of one consumer fetch; nil for a follower,
// without quotas, or while none is configured. Its limits are taken once,
// at the fetch's start: a quota set during a long poll applies from the
// next fetch.
type fetchQuota struct {
	q      Quotas
	limits quota.Limits
}

func (h *fetchHandler) quotaFor(req *kafka.Request, r *kmsg.FetchRequest) *fetchQuota {
	if h.opts.quotas == nil || r.ReplicaID >= 0 || !h.opts.quotas.Any() {
		return nil
	}
	l, ok := h.opts.quotas.Limits(quota.UserOf(req.Conn.Principal), req.ClientID)
	if !ok {
		return nil
	}
	return &fetchQuota{q: h.opts.quotas, limits: l}
}

// maxBytes bounds a fetch's max bytes by one window of the consumer's
// quota (quota.Manager.PerWindow; Kafka's bound is ten windows).
func (fq *fetchQuota) maxBytes(maxBytes int) int {
	if fq == nil {
		return maxBytes
	}
	if m := fq.limits.PerWindow(quota.Fetch); m < float64(maxBytes) {
		maxBytes = max(int(m), 1)
	}
	return maxBytes
}

// admitCold decides the cold reads of a fetch: none while the principal is
// over its cold-read quota (the fetch is then answered at once, those
// partitions empty, with the throttle), else each bounded by what one
// response may read from remote segments. It reports whether the cold
// reads were held back. now is the fetch's time.
func (fq *fetchQuota) admitCold(req *kafka.Request, cold []*coldRead, now time.Time) (held bool) {
	if fq == nil || len(cold) == 0 {
		return false
	}
	if d := fq.q.ThrottledFor(&fq.limits, quota.RemoteFetch, now); d > 0 {
		req.Throttle(d)
		return true
	}
	if m := fq.limits.PerWindow(quota.RemoteFetch); !math.IsInf(m, 1) {
		for _, c := range cold {
			c.budget = min(c.budget, max(int(m), 1))
		}
	}
	return false
}

// record counts, at now (the fetch's time at its answer), the bytes its
// cold reads returned (cold) against the principal's cold-read quota and
// the response's record bytes against the consumer's quota, and throttles
// the fetch when they put the consumer over either (by the longer
// throttle: kafka.Request.Throttle keeps the longest). Unlike Kafka, which answers a fetch over the consumer's quota
// without records (and takes the bytes back), the response keeps them: it
// carries at most one window of the quota (maxBytes), so the consumer goes
// over by at most that, while an empty answer costs it a round trip and a
// throttle per window (measured: 0.7-0.8 of the quota, against about 1
// this way).
func (fq *fetchQuota) record(req *kafka.Request, res []topicResult, cold []*coldRead, now time.Time) {
	if fq == nil {
		return
	}
	coldBytes := 0
	for _, c := range cold {
		for _, b := range c.batches {
			coldBytes += len(b)
		}
	}
	if coldBytes > 0 {
		req.Throttle(fq.q.RecordFor(&fq.limits, quota.RemoteFetch, float64(coldBytes), now))
	}
	n := 0
	for _, t := range res {
		for _, p := range t.parts {
			n += p.size
		}
	}
	req.Throttle(fq.q.RecordFor(&fq.limits, quota.Fetch, float64(n), now))
}

// SetThrottle sets the response's throttle_time_ms, its first field
// (kafka.ThrottleSetter).
func (b *body) SetThrottle(millis int32) {
	if len(b.buf) >= 4 {
		b.buf[0], b.buf[1], b.buf[2], b.buf[3] = byte(millis>>24), byte(millis>>16), byte(millis>>8), byte(millis)
	}
}
