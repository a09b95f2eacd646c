package testnode

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/shale-io/shale/broker"
)

// Scrape GETs /metrics from a node's admin listener and parses it.
func Scrape(t testing.TB, n *broker.Node) map[string]*dto.MetricFamily {
	t.Helper()
	body := AdminGet(t, n, broker.MetricsPath)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// AdminGet GETs path from the node's admin listener and fails unless the
// answer is 200.
func AdminGet(t testing.TB, n *broker.Node, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.AdminAddr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d, err %v: %.200s", path, resp.StatusCode, err, b)
	}
	return string(b)
}

// MetricValue sums the series of the family name whose labels include
// labels (name, value pairs): counters, gauges and histogram counts. ok is
// false when no series matches.
func MetricValue(fams map[string]*dto.MetricFamily, name string, labels ...string) (sum float64, ok bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, lp := range m.Label {
			got[lp.GetName()] = lp.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if got[labels[i]] != labels[i+1] {
				continue next
			}
		}
		ok = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum, ok
}

// MustMetric is MetricValue that fails when the series is absent.
func MustMetric(t testing.TB, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	v, ok := MetricValue(fams, name, labels...)
	if !ok {
		t.Fatalf("no series %s%v on /metrics", name, labels)
	}
	return v
}
