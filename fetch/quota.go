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
// quota is configured; while none is, a fetch measures nothing.
type Quotas interface {
	Any() bool
	Record(t quota.Type, user, clientID string, value float64, now time.Time) time.Duration
	Throttled(t quota.Type, user, clientID string, now time.Time) time.Duration
	PerWindow(t quota.Type, user, clientID string) float64
}

// WithQuotas holds consumers' fetches to their consumer_byte_rate and
// shale.remote_fetch_byte_rate quotas (follower fetches are exempt).
func WithQuotas(q Quotas) Option {
	return func(o *options) { o.quotas = q }
}

// fetchQuota is the quota state of one consumer fetch; nil for a follower,
// without quotas, or while none is configured.
type fetchQuota struct {
	q              Quotas
	user, clientID string
}

func (h *fetchHandler) quotaFor(req *kafka.Request, r *kmsg.FetchRequest) *fetchQuota {
	if h.opts.quotas == nil || r.ReplicaID >= 0 || !h.opts.quotas.Any() {
		return nil
	}
	return &fetchQuota{q: h.opts.quotas, user: quota.UserOf(req.Conn.Principal), clientID: req.ClientID}
}

// maxBytes bounds a fetch's max bytes by one window of the consumer's
// quota (quota.Manager.PerWindow; Kafka's bound is ten windows).
func (fq *fetchQuota) maxBytes(maxBytes int) int {
	if fq == nil {
		return maxBytes
	}
	if m := fq.q.PerWindow(quota.Fetch, fq.user, fq.clientID); m < float64(maxBytes) {
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
	if d := fq.q.Throttled(quota.RemoteFetch, fq.user, fq.clientID, now); d > 0 {
		req.Throttle(d)
		return true
	}
	if m := fq.q.PerWindow(quota.RemoteFetch, fq.user, fq.clientID); !math.IsInf(m, 1) {
		for _, c := range cold {
			c.budget = min(c.budget, max(int(m), 1))
		}
	}
	return false
}

// recordCold counts the bytes the cold reads returned against the
// principal's cold-read quota at now (when the reads ended); the response
// keeps them and the client is throttled after it.
func (fq *fetchQuota) recordCold(req *kafka.Request, cold []*coldRead, now time.Time) {
	if fq == nil {
		return
	}
	n := 0
	for _, c := range cold {
		for _, b := range c.batches {
			n += len(b)
		}
	}
	if n > 0 {
		req.Throttle(fq.q.Record(quota.RemoteFetch, fq.user, fq.clientID, float64(n), now))
	}
}

// record counts the response's record bytes against the consumer's quota
// and throttles the fetch when they put the consumer over it. Unlike Kafka,
// which answers such a fetch without records (and takes the bytes back),
// the response keeps them: it carries at most one window of the quota
// (maxBytes), so the consumer goes over by at most that, while an empty
// answer costs it a round trip and a throttle per window (measured: 0.7-0.8
// of the quota, against about 1 this way). now is the fetch's time at its
// answer.
func (fq *fetchQuota) record(req *kafka.Request, res []topicResult, now time.Time) {
	if fq == nil {
		return
	}
	n := 0
	for _, t := range res {
		for _, p := range t.parts {
			n += p.size
		}
	}
	req.Throttle(fq.q.Record(quota.Fetch, fq.user, fq.clientID, float64(n), now))
}

// SetThrottle sets the response's throttle_time_ms, its first field
// (kafka.ThrottleSetter).
func (b *body) SetThrottle(millis int32) {
	if len(b.buf) >= 4 {
		b.buf[0], b.buf[1], b.buf[2], b.buf[3] = byte(millis>>24), byte(millis>>16), byte(millis>>8), byte(millis)
	}
}
