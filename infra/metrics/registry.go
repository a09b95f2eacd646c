package metrics

import (
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shale-io/shale/infra/buildinfo"
)

// Registry holds one node's series. Its methods are safe for concurrent
// use, and a nil *Registry ignores every observation, so that components
// built without metrics need no checks.
type Registry struct {
	reg *registerer

	bytesIn             *prometheus.CounterVec
	messagesIn          *prometheus.CounterVec
	bytesOut            *prometheus.CounterVec
	replicationBytesOut *prometheus.CounterVec

	requests      *prometheus.CounterVec
	requestTime   *prometheus.HistogramVec
	requestFails  *prometheus.CounterVec
	requestStages requestStageSeries // see requests.go

	isrShrinks prometheus.Counter
	isrExpands prometheus.Counter

	objstore   *objectStoreSeries
	auth       *authSeries      // see auth.go
	conn       *connSeries      // see connections.go
	authorizer authorizerSeries // see authorizer.go
	quota      *quotaSeries     // see quota.go
	balancer   *balancerSeries  // see balancer.go
}

// requestTimeBuckets span a local produce (well under a millisecond) to a
// long-polling fetch or an acks=all produce waiting on a slow follower.
var requestTimeBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// New returns a Registry with every series registered, the Go runtime and
// process collectors included, and state read at each scrape (nil: no
// scrape-time series). state is called on the scraping goroutine, once per
// scrape; it must be safe for concurrent use.
func New(state func() NodeState) *Registry {
	r := &Registry{reg: &registerer{Registry: prometheus.NewRegistry()}}
	r.bytesIn = r.counterVec("kafka_server_brokertopicmetrics_bytes_in_total",
		"Record batch bytes appended by produce requests, per topic (Kafka BytesInPerSec).", "topic")
	r.messagesIn = r.counterVec("kafka_server_brokertopicmetrics_messages_in_total",
		"Records appended by produce requests, per topic (Kafka MessagesInPerSec).", "topic")
	r.bytesOut = r.counterVec("kafka_server_brokertopicmetrics_bytes_out_total",
		"Record bytes returned by consumers' fetch requests, per topic (Kafka BytesOutPerSec).", "topic")
	r.replicationBytesOut = r.counterVec("kafka_server_brokertopicmetrics_replication_bytes_out_total",
		"Record bytes returned by followers' fetch requests, per topic (Kafka ReplicationBytesOutPerSec).", "topic")
	r.requests = r.counterVec("kafka_network_requestmetrics_requests_total",
		"Requests answered or failed, per API and version (Kafka RequestsPerSec).", "request", "version")
	r.requestTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kafka_network_requestmetrics_total_time_seconds",
		Help:    "Time from reading a request to writing its response, per API (Kafka TotalTimeMs).",
		Buckets: requestTimeBuckets,
	}, []string{"request"})
	r.reg.MustRegister(r.requestTime)
	r.requestStages = r.newRequestStageSeries()
	r.requestFails = r.counterVec("shale_network_request_failures_total",
		"Requests whose handler or response write failed and closed the connection, per API.", "request")
	r.isrShrinks = r.counter("kafka_server_replicamanager_isr_shrinks_total",
		"ISR shrinks committed by this node as partition leader (Kafka IsrShrinksPerSec).")
	r.isrExpands = r.counter("kafka_server_replicamanager_isr_expands_total",
		"ISR expansions committed by this node as partition leader (Kafka IsrExpandsPerSec).")
	r.objstore = newObjectStoreSeries(r.reg)
	r.auth = newAuthSeries(r.reg)
	r.conn = newConnSeries(r.reg)
	r.authorizer = r.newAuthorizerSeries()
	r.quota = newQuotaSeries(r.reg)
	r.balancer = newBalancerSeries(r.reg)
	bi := buildinfo.Read()
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: "shale_build_info",
		Help:        "Always 1; its labels name the binary: module version, VCS revision (12 digits, +dirty for a modified tree) and Go version.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "revision": bi.ShortRevision(), "goversion": bi.GoVersion}})
	build.Set(1)
	r.reg.MustRegister(build)
	if state != nil {
		r.reg.MustRegister(&stateCollector{state: state})
	}
	// Besides the default series, the runtime's estimate of where its CPU
	// time goes (go_cpu_classes_*: user code, GC, scavenging, idle):
	// what an idle node's CPU is made of (issue 23).
	r.reg.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
		collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/cpu/classes/.*`)})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

func (r *Registry) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	r.reg.MustRegister(c)
	return c
}

func (r *Registry) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	r.reg.MustRegister(c)
	return c
}

// Handler serves the registry in the Prometheus text (or, when asked,
// OpenMetrics) exposition. A failure to collect one series is logged in the
// response and does not hide the others.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true})
}

// MustRegister adds collectors of series built elsewhere (the pushed
// client metrics of package telemetry) to the page. It panics when their
// descriptors clash with registered ones, as a program error. A nil
// *Registry ignores it.
func (r *Registry) MustRegister(cs ...prometheus.Collector) {
	if r == nil {
		return
	}
	r.reg.MustRegister(cs...)
}

// Gatherer exposes the underlying registry (for tests and tools).
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg.Registry }

// Produced counts a produce request's append to topic: bytes of record
// batches and records. It implements ingest.ProduceObserver.
func (r *Registry) Produced(topic string, bytes, records int) {
	if r == nil {
		return
	}
	r.bytesIn.WithLabelValues(topic).Add(float64(bytes))
	r.messagesIn.WithLabelValues(topic).Add(float64(records))
}

// Fetched counts bytes returned for topic by a consumer's fetch. With
// Replicated it implements fetch.ConsumeObserver.
func (r *Registry) Fetched(topic string, bytes int) {
	if r == nil {
		return
	}
	r.bytesOut.WithLabelValues(topic).Add(float64(bytes))
}

// Replicated counts bytes returned for topic by a follower's fetch.
func (r *Registry) Replicated(topic string, bytes int) {
	if r == nil {
		return
	}
	r.replicationBytesOut.WithLabelValues(topic).Add(float64(bytes))
}

// ObserveRequest counts one request of the named API (Kafka's name, for
// example "Produce") and version, its total time, and whether it failed.
func (r *Registry) ObserveRequest(api string, version int16, d time.Duration, failed bool) {
	if r == nil {
		return
	}
	r.requests.WithLabelValues(api, versionLabel(version)).Inc()
	r.requestTime.WithLabelValues(api).Observe(d.Seconds())
	if failed {
		r.requestFails.WithLabelValues(api).Inc()
	}
}

// ISRChanged counts one committed ISR change of a partition this node
// leads: a shrink when followers left, an expansion when followers joined
// (both when both).
func (r *Registry) ISRChanged(shrunk, expanded bool) {
	if r == nil {
		return
	}
	if shrunk {
		r.isrShrinks.Inc()
	}
	if expanded {
		r.isrExpands.Inc()
	}
}

// versionLabel formats small API versions without allocating.
func versionLabel(v int16) string {
	if v >= 0 && int(v) < len(versionLabels) {
		return versionLabels[v]
	}
	return strconv.Itoa(int(v))
}

var versionLabels = func() []string {
	out := make([]string, 32)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}()

// registerer is the node's Prometheus registry, remembering what was
// registered so that Names can list every series the node may export.
type registerer struct {
	*prometheus.Registry
	collectors []prometheus.Collector
}

func (r *registerer) MustRegister(cs ...prometheus.Collector) {
	r.Registry.MustRegister(cs...)
	r.collectors = append(r.collectors, cs...)
}

var descName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Names returns the name of every metric family the registry may export,
// sorted: those with no series yet (a labelled series before its first
// observation) included. A histogram is named once, without the _bucket,
// _sum and _count of its samples. The dashboards and alert rules under
// deploy/ are checked against it.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	ch := make(chan *prometheus.Desc)
	go func() {
		for _, c := range r.reg.collectors {
			c.Describe(ch)
		}
		close(ch)
	}()
	seen := map[string]bool{}
	for d := range ch {
		if m := descName.FindStringSubmatch(d.String()); m != nil {
			seen[m[1]] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}
