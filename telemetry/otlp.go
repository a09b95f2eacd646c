package telemetry

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	metricsv1 "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/shale-io/shale/segment/batch"
)

// kind is how a point is exported.
type kind uint8

const (
	kindGauge kind = iota
	kindCounter
	kindHistogram
)

// point is one OTLP data point, flattened: what export.go keeps per series.
type point struct {
	name, help string
	kind       kind
	delta      bool     // a delta of a monotonic sum or histogram, to add
	labels     []string // attribute name, value, name, value..., sorted by name
	value      float64
	// histogram
	count   uint64
	sum     float64
	bounds  []float64
	buckets []uint64 // per bucket (not cumulative), len(bounds)+1
}

// Bounds on what one push may carry, against hostile payloads.
const (
	maxPointsPerPush    = 10000
	maxLabelsPerPoint   = 16
	maxLabelValueLength = 256
	maxBuckets          = 64
)

// decodePush decompresses (at most maxSize bytes) and decodes a push's
// Metrics into points. Points it cannot export (exponential histograms,
// summaries, NaN-free checks failing) are skipped; an error means the
// payload itself is bad. The points do not alias b.
func decodePush(codec batch.Codec, b []byte, maxSize int) ([]point, error) {
	raw, err := batch.Decompress(codec, nil, b, maxSize)
	if err != nil {
		return nil, err
	}
	var md metricsv1.MetricsData
	if err := proto.Unmarshal(raw, &md); err != nil {
		return nil, fmt.Errorf("telemetry: OTLP metrics: %w", err)
	}
	var pts []point
	for _, rm := range md.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, mt := range sm.GetMetrics() {
				pts = appendPoints(pts, mt)
				if len(pts) > maxPointsPerPush {
					return nil, fmt.Errorf("telemetry: more than %d data points in one push", maxPointsPerPush)
				}
			}
		}
	}
	return pts, nil
}

func appendPoints(pts []point, mt *metricsv1.Metric) []point {
	name := promName(mt.GetName())
	if name == "" || reservedName(name) {
		return pts
	}
	help := mt.GetDescription()
	if help == "" {
		help = "Client metric " + mt.GetName() + " pushed with KIP-714."
	}
	number := func(k kind, delta bool, dp *metricsv1.NumberDataPoint) {
		v := dp.GetAsDouble()
		if _, ok := dp.GetValue().(*metricsv1.NumberDataPoint_AsInt); ok {
			v = float64(dp.GetAsInt())
		}
		pts = append(pts, point{name: name, help: help, kind: k, delta: delta, labels: labelsOf(dp.GetAttributes()), value: v})
	}
	switch d := mt.GetData().(type) {
	case *metricsv1.Metric_Gauge:
		for _, dp := range d.Gauge.GetDataPoints() {
			number(kindGauge, false, dp)
		}
	case *metricsv1.Metric_Sum:
		k, delta := kindGauge, false
		if d.Sum.GetIsMonotonic() {
			k = kindCounter
			delta = d.Sum.GetAggregationTemporality() == metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
		}
		for _, dp := range d.Sum.GetDataPoints() {
			number(k, delta, dp)
		}
	case *metricsv1.Metric_Histogram:
		delta := d.Histogram.GetAggregationTemporality() == metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
		for _, dp := range d.Histogram.GetDataPoints() {
			bounds, counts := dp.GetExplicitBounds(), dp.GetBucketCounts()
			if len(counts) != len(bounds)+1 || len(bounds) > maxBuckets || !slices.IsSorted(bounds) {
				continue
			}
			pts = append(pts, point{name: name, help: help, kind: kindHistogram, delta: delta, labels: labelsOf(dp.GetAttributes()),
				count: dp.GetCount(), sum: dp.GetSum(), bounds: slices.Clone(bounds), buckets: slices.Clone(counts)})
		}
	}
	return pts
}

// labelsOf turns OTLP attributes into Prometheus labels, sorted by name:
// names sanitized (and dropped when they would shadow the client's own
// labels), values as strings, truncated.
func labelsOf(attrs []*commonv1.KeyValue) []string {
	var out []string
	for _, kv := range attrs {
		if len(out)/2 >= maxLabelsPerPoint {
			break
		}
		k := promName(kv.GetKey())
		if k == "" || strings.HasPrefix(k, "__") || slices.Contains(clientLabels[:], k) {
			continue
		}
		v := anyString(kv.GetValue())
		if len(v) > maxLabelValueLength {
			v = v[:maxLabelValueLength]
		}
		out = append(out, k, v)
	}
	// sort pairs by name, dropping repeated names
	idx := make([]int, len(out)/2)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(out[2*a], out[2*b]) })
	sorted := make([]string, 0, len(out))
	for _, i := range idx {
		if n := len(sorted); n > 0 && sorted[n-2] == out[2*i] {
			continue
		}
		sorted = append(sorted, out[2*i], out[2*i+1])
	}
	return sorted
}

func anyString(v *commonv1.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonv1.AnyValue_StringValue:
		return x.StringValue
	case *commonv1.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonv1.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonv1.AnyValue_DoubleValue:
		if math.IsNaN(x.DoubleValue) {
			return "NaN"
		}
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	}
	return ""
}

// promName maps an OTLP name to a Prometheus one: every character outside
// [a-zA-Z0-9_] (the dots of org.apache.kafka.producer...) becomes '_', and
// a leading digit gets a '_' in front. "" stays "".
func promName(s string) string {
	if s == "" || len(s) > 200 {
		return ""
	}
	var b strings.Builder
	if s[0] >= '0' && s[0] <= '9' {
		b.WriteByte('_')
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// reservedName: a client may not push a series into the node's own
// namespaces, where it would pass for (or collide with) the node's metrics.
func reservedName(name string) bool {
	for _, p := range []string{"kafka_", "shale_", "go_", "process_", "promhttp_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
