package telemetry

import (
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
)

// clientLabels name the client on each of its series.
var clientLabels = [4]string{"client_instance_id", "client_id", "client_software_name", "client_software_version"}

// series is one exported series of one client: the last value of a gauge
// or of a cumulative counter, the running total of a delta counter, a
// histogram's counts likewise.
type series struct {
	name, help string
	kind       kind
	labels     []string // name, value pairs, sorted by name
	value      float64
	count      uint64
	sum        float64
	bounds     []float64
	buckets    []uint64
}

func seriesKey(p *point) string {
	return p.name + "\xff" + strings.Join(p.labels, "\xff")
}

// export records a push's points as c's series, within the bounds.
// REQUIRES: m.mu held.
func (m *Manager) export(c *client, pts []point) {
	if c.series == nil {
		c.series = map[string]*series{}
	}
	for i := range pts {
		p := &pts[i]
		key := seriesKey(p)
		s := c.series[key]
		if s == nil {
			if len(c.series) >= m.cfg.MaxSeriesPerClient || m.mu.series >= m.cfg.MaxSeries {
				m.mu.dropped++
				continue
			}
			s = &series{name: p.name, help: p.help, kind: p.kind, labels: p.labels}
			c.series[key] = s
			m.mu.series++
		}
		if s.kind != p.kind {
			s.kind, s.value, s.count, s.sum, s.bounds, s.buckets = p.kind, 0, 0, 0, nil, nil
		}
		switch p.kind {
		case kindGauge:
			s.value = p.value
		case kindCounter:
			if p.delta {
				s.value += p.value
			} else {
				s.value = p.value
			}
		case kindHistogram:
			if p.delta && slices.Equal(s.bounds, p.bounds) {
				s.count += p.count
				s.sum += p.sum
				for j := range s.buckets {
					s.buckets[j] += p.buckets[j]
				}
			} else {
				s.count, s.sum, s.bounds, s.buckets = p.count, p.sum, p.bounds, p.buckets
			}
		}
	}
}

// Collectors returns the prometheus.Collectors of the Manager's own series
// and of the pushed series, for the node's metrics registry. The second is
// unchecked (its series come and go with the clients): every series of one
// name takes the type and help of the first client's, in instance id order;
// a series of the same name and another type is left out.
func (m *Manager) Collectors() []prometheus.Collector {
	return []prometheus.Collector{ownCollector{m}, collector{m}}
}

type collector struct{ m *Manager }

func (collector) Describe(chan<- *prometheus.Desc) {}

// ownCollector exports the Manager's counters.
type ownCollector struct{ m *Manager }

func (ownCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descClients, descSeries, descDropped, descPushes} {
		ch <- d
	}
}

var (
	descClients = prometheus.NewDesc("shale_client_telemetry_clients",
		"Client instances that asked this node for their telemetry subscription or pushed to it (KIP-714), not yet expired.", nil, nil)
	descSeries = prometheus.NewDesc("shale_client_telemetry_series",
		"Series of pushed client metrics exported on this page.", nil, nil)
	descDropped = prometheus.NewDesc("shale_client_telemetry_series_dropped_total",
		"New series of pushed client metrics dropped at the per-client or overall bound.", nil, nil)
	descPushes = prometheus.NewDesc("shale_client_telemetry_pushes_total",
		"PushTelemetry requests answered, by error (NONE when accepted).", []string{"error"}, nil)
)

func (c ownCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gc(m.cfg.Now())
	ch <- prometheus.MustNewConstMetric(descClients, prometheus.GaugeValue, float64(len(m.mu.clients)))
	ch <- prometheus.MustNewConstMetric(descSeries, prometheus.GaugeValue, float64(m.mu.series))
	ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(m.mu.dropped))
	for code, n := range m.mu.pushes {
		name := "NONE"
		if code != 0 {
			if e := kerr.ErrorForCode(code); e != nil {
				name = e.Error()
				if ke, ok := e.(*kerr.Error); ok {
					name = ke.Message
				}
			}
		}
		ch <- prometheus.MustNewConstMetric(descPushes, prometheus.CounterValue, float64(n), name)
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gc(m.cfg.Now())

	ids := make([][16]byte, 0, len(m.mu.clients))
	for id := range m.mu.clients {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
	type family struct {
		help string
		kind kind
	}
	families := map[string]family{}
	for _, id := range ids {
		cl := m.mu.clients[id]
		keys := make([]string, 0, len(cl.series))
		for k := range cl.series {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s := cl.series[k]
			f, seen := families[s.name]
			if !seen {
				f = family{s.help, s.kind}
				families[s.name] = f
			} else if f.kind != s.kind {
				continue
			}
			names := make([]string, 0, len(clientLabels)+len(s.labels)/2)
			values := make([]string, 0, cap(names))
			names = append(names, clientLabels[:]...)
			values = append(values, cl.labels[:]...)
			for i := 0; i < len(s.labels); i += 2 {
				names = append(names, s.labels[i])
				values = append(values, s.labels[i+1])
			}
			desc := prometheus.NewDesc(s.name, f.help, names, nil)
			var metric prometheus.Metric
			var err error
			switch s.kind {
			case kindGauge:
				metric, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, s.value, values...)
			case kindCounter:
				metric, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, s.value, values...)
			case kindHistogram:
				cum := make(map[float64]uint64, len(s.bounds))
				var run uint64
				for i, b := range s.bounds {
					run += s.buckets[i]
					cum[b] = run
				}
				metric, err = prometheus.NewConstHistogram(desc, s.count, s.sum, cum, values...)
			}
			if err == nil {
				ch <- metric
			}
		}
	}
}
