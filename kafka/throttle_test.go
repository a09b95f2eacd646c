package kafka

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fixedRequestQuota throttles every request by d.
type fixedRequestQuota struct {
	d    time.Duration
	mu   sync.Mutex
	seen []time.Duration
}

func (q *fixedRequestQuota) Active() bool { return true }

func (q *fixedRequestQuota) RequestTime(req *Request, handlerTime time.Duration) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seen = append(q.seen, handlerTime)
	return q.d
}

// TestThrottleMutesTheConnection: a handler's throttle reaches the
// response's throttle_time_ms, and the connection's next request, already
// sent, is not handled before the throttle has passed (KIP-219).
func TestThrottleMutesTheConnection(t *testing.T) {
	const throttle = 300 * time.Millisecond
	var mu sync.Mutex
	var starts, ends []time.Time
	srv := startServer(t, ServerConfig{}, func(r *Registry) {
		r.Register(kmsg.ListGroups, 0, 4, func(ctx context.Context, req *Request) (Reply, error) {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			if req.CorrelationID == 1 {
				req.Throttle(throttle / 2)
				req.Throttle(throttle) // the largest counts
				req.Throttle(throttle / 3)
			}
			resp := req.Msg.(*kmsg.ListGroupsRequest).ResponseKind()
			mu.Lock()
			ends = append(ends, time.Now())
			mu.Unlock()
			return Reply{Response: resp}, nil
		})
	})
	c := dialRaw(t, srv.addr)
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 4
	// Pipelined: the second is on the wire before the first is answered.
	c.write(append(c.frame(req, 1), c.frame(req, 2)...))
	for corr, want := range []int32{int32(throttle / time.Millisecond), 0} {
		resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
		if got := c.recv(resp); got != int32(corr+1) {
			t.Fatalf("correlation %d, want %d", got, corr+1)
		}
		if resp.ThrottleMillis != want {
			t.Fatalf("response %d: throttle %d ms, want %d", corr+1, resp.ThrottleMillis, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if gap := starts[1].Sub(ends[0]); gap < throttle {
		t.Fatalf("the second request was handled %v after the first returned, within its %v throttle", gap, throttle)
	}
}

// TestRequestQuotaThrottles: the request quota hears each request's handler
// time, and its throttle joins the handler's (the larger wins).
func TestRequestQuotaThrottles(t *testing.T) {
	q := &fixedRequestQuota{d: 40 * time.Millisecond}
	srv := startServer(t, ServerConfig{RequestQuota: q}, func(r *Registry) {
		r.Register(kmsg.ListGroups, 0, 4, func(ctx context.Context, req *Request) (Reply, error) {
			if req.CorrelationID == 2 {
				req.Throttle(90 * time.Millisecond)
			}
			return Reply{Response: req.Msg.(*kmsg.ListGroupsRequest).ResponseKind()}, nil
		})
	})
	c := dialRaw(t, srv.addr)
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 4
	for _, tc := range []struct{ corr, want int32 }{{1, 40}, {2, 90}} {
		c.send(req, tc.corr)
		resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
		c.recv(resp)
		if resp.ThrottleMillis != tc.want {
			t.Fatalf("request %d: throttle %d ms, want %d", tc.corr, resp.ThrottleMillis, tc.want)
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.seen) != 2 {
		t.Fatalf("request quota told of %d requests, want 2", len(q.seen))
	}
}

func TestThrottleMillis(t *testing.T) {
	for d, want := range map[time.Duration]int32{0: 0, time.Microsecond: 1, time.Millisecond: 1, 1500 * time.Microsecond: 2, time.Hour * 1000: 1<<31 - 1} {
		if got := throttleMillis(d); got != want {
			t.Errorf("throttleMillis(%v) = %d, want %d", d, got, want)
		}
	}
}
