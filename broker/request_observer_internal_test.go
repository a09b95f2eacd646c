package broker

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/metrics"
	"github.com/shale-io/shale/kafka"
)

// fetchFrom returns a decoded Fetch request at version from replica id
// (in ReplicaState from v15, as the decoder leaves it).
func fetchFrom(version int16, id int32) *kafka.Request {
	f := kmsg.NewPtrFetchRequest()
	f.SetVersion(version)
	if version >= 15 {
		f.ReplicaState.ID = id
	} else {
		f.ReplicaID = id
	}
	return &kafka.Request{Key: fetchKey, Version: version, Msg: f}
}

// TestRequestObserverNames: a Fetch is named by its replica id (ReplicaID,
// or ReplicaState from v15): FetchFollower from a replica, FetchConsumer
// otherwise, including an undecoded one; other APIs by their name. Each
// name's series are resolved once.
func TestRequestObserverNames(t *testing.T) {
	r := metrics.New(nil)
	o := newRequestObserver(r)
	for _, c := range []struct {
		req  *kafka.Request
		want string
	}{
		{fetchFrom(12, 2), "FetchFollower"},
		{fetchFrom(12, 0), "FetchFollower"},
		{fetchFrom(12, -1), "FetchConsumer"},
		{fetchFrom(15, 3), "FetchFollower"},
		{fetchFrom(15, -1), "FetchConsumer"},
		{&kafka.Request{Key: fetchKey, Version: 99}, "FetchConsumer"}, // answered UNSUPPORTED_VERSION, no Msg
		{&kafka.Request{Key: 0, Version: 9, Msg: kmsg.NewPtrProduceRequest()}, "Produce"},
	} {
		if first, again := o.series(c.req), o.series(c.req); first != again {
			t.Errorf("v%d key %d: series resolved again, not cached", c.req.Version, c.req.Key)
		}
		before := requestsTotal(t, r, c.want, c.req.Version)
		o.ObserveStages(c.req, kafka.RequestStages{}, nil)
		if got := requestsTotal(t, r, c.want, c.req.Version); got != before+1 {
			t.Errorf("key %d v%d %+v: requests_total{request=%q} went from %d to %d, want one more", c.req.Key, c.req.Version, c.req.Msg, c.want, before, got)
		}
	}
	body := scrape(t, r)
	if strings.Contains(body, `request="Fetch"`) {
		t.Errorf("a series named Fetch:\n%s", body)
	}
}

// scrape returns r's exposition.
func scrape(t *testing.T, r *metrics.Registry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// requestsTotal reads requests_total{request=api,version=v} from r, 0 when absent.
func requestsTotal(t *testing.T, r *metrics.Registry, api string, v int16) int {
	t.Helper()
	prefix := fmt.Sprintf("kafka_network_requestmetrics_requests_total{request=%q,version=\"%d\"} ", api, v)
	for _, l := range strings.Split(scrape(t, r), "\n") {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			n, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return n
		}
	}
	return 0
}

// TestRequestObserverNoAllocs: observing a consumer's and a follower's Fetch
// allocates nothing once their series are resolved.
func TestRequestObserverNoAllocs(t *testing.T) {
	o := newRequestObserver(metrics.New(nil))
	consumer, follower := fetchFrom(12, -1), fetchFrom(12, 1)
	st := kafka.RequestStages{Local: time.Millisecond, Remote: time.Millisecond, Total: 2 * time.Millisecond}
	o.ObserveStages(consumer, st, nil)
	o.ObserveStages(follower, st, nil)
	if n := testing.AllocsPerRun(1000, func() {
		o.ObserveStages(consumer, st, nil)
		o.ObserveStages(follower, st, nil)
	}); n != 0 {
		t.Fatalf("%v allocations per pair of observations, want 0", n)
	}
}
