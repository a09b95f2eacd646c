package kafka

import (
	"context"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Throttle reports that the client is over a quota and must wait d
// (Kafka's throttle time: KIP-13, KIP-124). Call it from the handler
// during its run; calls keep the largest d. The server writes the
// throttle, with the request quota's (ServerConfig.RequestQuota), into
// the response's throttle_time_ms and then mutes the connection for it
// (KIP-219): no further request of the connection is handled until d has
// passed after the response was written. Clients that support KIP-219 back
// off themselves; the mute holds the others.
func (r *Request) Throttle(d time.Duration) {
	if d > r.throttle {
		r.throttle = d
	}
}

// Throttled returns the largest throttle reported so far.
func (r *Request) Throttled() time.Duration { return r.throttle }

// RequestQuota is the request-time quota (KIP-124): told how long each
// request's handler worked, it returns how long the client must be
// throttled. It must be safe for concurrent use and quick.
type RequestQuota interface {
	// Active reports whether some request-time quota may apply. While it
	// is false the server neither times the handler for the quota nor
	// calls RequestTime; it is asked once per request and must be cheap.
	Active() bool
	// RequestTime is called after the handler returned, on the
	// connection's dispatcher, with the handler's run less the waits it
	// reported (Request.Waited): the time it took a handler.
	RequestTime(req *Request, handlerTime time.Duration) time.Duration
}

// ThrottleSetter is a BodyWriter whose encoded body carries a
// throttle_time_ms the server may set before writing it (a Fetch body,
// whose first four bytes are its throttle).
type ThrottleSetter interface {
	SetThrottle(millis int32)
}

// throttleMillis is d in whole milliseconds, rounded up, within int32.
func throttleMillis(d time.Duration) int32 {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return int32(min(int64(ms), math.MaxInt32))
}

// setThrottle writes d into a response that has a throttle field.
func setThrottle(resp kmsg.Response, d time.Duration) {
	if d <= 0 {
		return
	}
	if tr, ok := resp.(kmsg.SetThrottleResponse); ok {
		tr.SetThrottle(throttleMillis(d))
	}
}

// muteCheck bounds one wait of a muted dispatcher.
const muteCheck = 100 * time.Millisecond

// mute holds the connection's requests until d after now (or later, if it
// is already muted longer).
func (c *conn) mute(d time.Duration) {
	if d <= 0 {
		return
	}
	until := time.Now().Add(d).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// waitUnmuted blocks the dispatcher while the connection is muted, until
// ctx ends or the connection is stopping (a graceful shutdown answers what
// was read without waiting out throttles). The writer may extend the mute
// meanwhile, hence the loop; each wait is at most muteCheck, so that a
// stop is noticed.
func (c *conn) waitUnmuted(ctx context.Context) {
	for !c.stopping.Load() {
		d := time.Until(time.Unix(0, c.mutedUntil.Load()))
		if d <= 0 {
			return
		}
		t := time.NewTimer(min(d, muteCheck))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}
