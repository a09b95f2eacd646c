package broker_test

import (
	"math"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// requestSeriesNames are the request metrics labelled by request.
var requestSeriesNames = append([]string{
	"kafka_network_requestmetrics_requests_total",
	"kafka_network_requestmetrics_total_time_seconds",
	"shale_network_request_failures_total",
}, requestStageSeries...)

// noFetchSeries fails if any request series of the node is named Fetch:
// Fetch is reported as FetchConsumer and FetchFollower only.
func noFetchSeries(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	for _, name := range requestSeriesNames {
		if v, ok := testnode.MetricValue(fams, name, "request", "Fetch"); ok {
			t.Errorf("%s{request=\"Fetch\"} = %v on /metrics; Fetch is FetchConsumer or FetchFollower", name, v)
		}
	}
}

// longPoll sends one consumer Fetch (replica id -1) at offset 0 of an empty
// topic with min bytes 1 and maxWait, and returns how long the answer took
// and the partition's error code.
func longPoll(t *testing.T, cl *kgo.Client, topic string, maxWait time.Duration) (time.Duration, int16) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(maxWait.Milliseconds())
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, testnode.TopicID(t, cl, topic)
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, 0, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	start := time.Now()
	resp, err := req.RequestWith(proctest.Context(t, 30*time.Second), cl)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch answered %d topics", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode == 0 && len(p.RecordBatches) != 0 {
		t.Fatalf("fetch of an empty topic returned %d bytes", len(p.RecordBatches))
	}
	return took, p.ErrorCode
}

// TestFetchConsumerLongPollIsRemote: consumer fetches at the log end of an
// empty topic (min bytes 1, max wait 300 ms, nothing produced) long-poll
// until their max wait; on /metrics they are FetchConsumer requests, their
// wait is remote time (Kafka's DelayedFetch) rather than local, and the
// stages still add up to the total. No series is named Fetch.
func TestFetchConsumerLongPollIsRemote(t *testing.T) {
	const maxWait = 300 * time.Millisecond
	const polls = 3
	n := testnode.Start(t, t.TempDir())
	ctx := proctest.Context(t, 60*time.Second)
	cl := testnode.Client(t, n.KafkaAddr())
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "poll"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	// The partition may take a moment to have a leader: poll until a fetch
	// is answered without error, then long-poll polls more times.
	// The node records a request's metrics after its answer is on the
	// wire, so a scrape taken now may miss these first fetches: they are
	// counted here instead, and the scrape below waits for them all.
	tries := 0
	proctest.Eventually(t, 20*time.Second, "a fetch answered without error", func() bool {
		tries++
		_, code := longPoll(t, cl, "poll", 0)
		return code == 0
	})
	for range polls {
		took, code := longPoll(t, cl, "poll", maxWait)
		if code != 0 {
			t.Fatalf("long poll answered %v", kerr.ErrorForCode(code))
		}
		if took < maxWait {
			t.Fatalf("an empty fetch with min bytes 1 answered after %v, before its %v max wait", took, maxWait)
		}
	}
	var f map[string]*dto.MetricFamily
	proctest.Eventually(t, 20*time.Second, "the long polls in FetchConsumer's total time", func() bool {
		f = testnode.Scrape(t, n)
		h := histogramOf(f, "kafka_network_requestmetrics_total_time_seconds", "FetchConsumer")
		return h.GetSampleCount() >= uint64(tries+polls)
	})
	noFetchSeries(t, f)
	total := histogramOf(f, "kafka_network_requestmetrics_total_time_seconds", "FetchConsumer")
	if v := testnode.MustMetric(t, f, "kafka_network_requestmetrics_requests_total", "request", "FetchConsumer"); v != float64(total.GetSampleCount()) {
		t.Errorf("FetchConsumer requests_total %v, total time has %d samples", v, total.GetSampleCount())
	}
	sums := map[string]float64{}
	var stageSum float64
	for _, name := range requestStageSeries {
		h := histogramOf(f, name, "FetchConsumer")
		if h == nil {
			t.Fatalf("no %s{request=\"FetchConsumer\"} on /metrics", name)
		}
		if h.GetSampleCount() != total.GetSampleCount() {
			t.Errorf("%s: %d samples, total time has %d", name, h.GetSampleCount(), total.GetSampleCount())
		}
		sums[name] = h.GetSampleSum()
		stageSum += h.GetSampleSum()
	}
	if d := math.Abs(stageSum - total.GetSampleSum()); d > 1e-6*total.GetSampleSum()+1e-9 {
		t.Errorf("FetchConsumer stages sum to %vs, total %vs", stageSum, total.GetSampleSum())
	}
	local := sums["kafka_network_requestmetrics_local_time_seconds"]
	remote := sums["kafka_network_requestmetrics_remote_time_seconds"]
	// Each long poll's handler ran at least its max wait, nearly all of it
	// waiting: an empty partition's reads take microseconds. The wait must
	// be remote, so remote outweighs local (without Request.Waited, remote
	// is 0 and the polls are all local).
	if handler := local + remote; handler < polls*maxWait.Seconds() {
		t.Errorf("FetchConsumer local %vs + remote %vs, below the %d polls' %v max waits", local, remote, polls, maxWait)
	}
	if remote <= local {
		t.Errorf("FetchConsumer remote %vs, local %vs: the long polls' wait is not remote time", remote, local)
	}
}

// TestFetchFollowerSeries: on a 2-node cluster with a replication factor 2
// topic, the leader reports its follower's fetches as FetchFollower (every
// stage, beside the total and the count), a consumer's as FetchConsumer,
// and nothing as Fetch.
func TestFetchFollowerSeries(t *testing.T) {
	leader, follower := startRF2Produced(t, 20)
	if got := testnode.ConsumeAll(t, leader.KafkaAddr(), "rep", 20); len(got) != 20 {
		t.Fatalf("consumed %d", len(got))
	}
	// acks=all: the follower's fetches were answered before the acks; the
	// consumer's are observed just after their answers are written: poll.
	var f map[string]*dto.MetricFamily
	proctest.Eventually(t, 20*time.Second, "FetchFollower and FetchConsumer requests on the leader", func() bool {
		f = testnode.Scrape(t, leader)
		fl, _ := testnode.MetricValue(f, "kafka_network_requestmetrics_requests_total", "request", "FetchFollower")
		co, _ := testnode.MetricValue(f, "kafka_network_requestmetrics_requests_total", "request", "FetchConsumer")
		return fl >= 1 && co >= 1
	})
	noFetchSeries(t, f)
	for _, name := range append([]string{"kafka_network_requestmetrics_total_time_seconds"}, requestStageSeries...) {
		if v := testnode.MustMetric(t, f, name, "request", "FetchFollower"); v < 1 {
			t.Errorf("%s{request=\"FetchFollower\"}: %v samples", name, v)
		}
	}
	noFetchSeries(t, testnode.Scrape(t, follower))
}
