package kafka

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
)

// recordingObserver keeps every observation.
type recordingObserver struct {
	mu  sync.Mutex
	obs []observation
}

type observation struct {
	key, version int16
	d            time.Duration
	err          error
}

func (r *recordingObserver) ObserveRequest(key, version int16, d time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.obs = append(r.obs, observation{key, version, d, err})
}

// waitN polls until n observations are recorded and returns them.
func (r *recordingObserver) waitN(t *testing.T, n int) []observation {
	t.Helper()
	var out []observation
	err := proctest.Poll(testTimeout, time.Millisecond, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.obs) < n {
			return false
		}
		out = append([]observation(nil), r.obs...)
		return true
	})
	if err == nil {
		return out
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t.Fatalf("%d observations, want %d: %+v", len(r.obs), n, r.obs)
	return nil
}

// TestRequestObserver: answered requests are reported with their key and
// version and no error; a handler failure is reported with its error.
func TestRequestObserver(t *testing.T) {
	obs := &recordingObserver{}
	errBoom := errors.New("boom")
	ts := startServer(t, ServerConfig{Observer: obs}, func(reg *Registry) {
		reg.Register(kmsg.Metadata, 0, 12, func(_ context.Context, req *Request) (Reply, error) {
			return Reply{Response: metadataReply(req, "h", 1)}, nil
		})
		reg.Register(kmsg.DescribeConfigs, 0, 4, func(context.Context, *Request) (Reply, error) { return Reply{}, errBoom })
	})
	c := dialRaw(t, ts.addr)
	c.roundTrip(1)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 7
	c.send(md, 2)
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 7
	c.recv(resp)
	got := obs.waitN(t, 2)
	if got[0].key != 18 || got[0].version != 3 || got[0].err != nil || got[0].d < 0 {
		t.Fatalf("first observation %+v, want ApiVersions v3 without error", got[0])
	}
	if got[1].key != 3 || got[1].version != 7 || got[1].err != nil {
		t.Fatalf("second observation %+v, want Metadata v7 without error", got[1])
	}

	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Version = 1
	c.send(dc, 3)
	c.expectClosed()
	got = obs.waitN(t, 3)
	if got[2].key != 32 || !errors.Is(got[2].err, errBoom) {
		t.Fatalf("third observation %+v, want DescribeConfigs with the handler's error", got[2])
	}
}
