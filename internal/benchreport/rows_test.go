package main

import (
	"strings"
	"testing"
)

func TestWriteGoBench(t *testing.T) {
	out := `pkg: github.com/shale-io/shale/segment
BenchmarkAppend-2 100 1000 ns/op 400.00 MB/s
BenchmarkPlainWrite-2 100 1000 ns/op 500.00 MB/s
BenchmarkNew-2 100 42 ns/op
pkg: github.com/shale-io/shale/kafka
BenchmarkRoundTrip/server-2 100 90000 ns/op 1.00 MB/s
BenchmarkRoundTrip/tcp-echo-2 100 30000 ns/op 3.00 MB/s
pkg: github.com/shale-io/shale/ingest
BenchmarkProduceChecks-2 100 3300 ns/op 3000 bypassed-ns/op 1.100 ratio
pkg: github.com/shale-io/shale/internal/clustertest
BenchmarkUncleanRestart/partitions-8-2 1 420 ns/op 6000 opened-ms 11000 ready-ms
BenchmarkUncleanRestart/partitions-1000-2 1 900 ns/op 7200 opened-ms 33000 ready-ms
BenchmarkSpreadProduce/partitions-8-2 1 500 ns/op 100.0 MB/s 10.0 node-cpu-s/GB 900 consume-MB/s 0.5 consume-node-cpu-s/GB
BenchmarkSpreadProduce/partitions-1000-2 1 500 ns/op 80.0 MB/s 25.0 node-cpu-s/GB 450 consume-MB/s 0.6 consume-node-cpu-s/GB
BenchmarkManyPartitions/partitions-8-2 1 500 ns/op 100 ready-ms 0.5 node-idle-cpu-% 40 rss-mb
BenchmarkManyPartitions/partitions-10000-2 1 500 ns/op 30000 ready-ms 2.0 node-idle-cpu-% 400 rss-mb
`
	samples, err := ParseBench(strings.NewReader(out), 2)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	med := Medians(samples)
	used := writeGoBench(&b, med)
	writeOthers(&b, med, used)
	got := b.String()
	for _, want := range []string{
		"ratio 0.800 (higher is better)  goal >= 0.80 met",
		"ratio 3.000 (lower is better)",
		"MISSING: no BenchmarkOffsetLookup in ./segment",
		"segment BenchmarkNew",
		"3300 ns  vs the same produce, no checks      3000 ns  ratio 1.100 (lower is better)  goal <= 1.02 NOT MET",
		"kill -9 restart 1000p, opened           7200 ms  vs 8 partitions (same run)       6000 ms  ratio 1.200 (lower is better)  goal <= 2.5 met",
		"ratio 3.000 (lower is better)  goal <= 2.5 NOT MET",
		"ratio 0.800 (higher is better)  goal >= 0.70 met",
		"ratio 2.500 (lower is better)  goal <= 2.0 NOT MET",
		"ratio 0.500 (higher is better)  goal >= 0.70 NOT MET",
		"ratio 1.200 (lower is better)\n",
		"partitions led, full ISRs partitions-10000     30000 ms  vs 8 partitions (same run)        100 ms  ratio 300.000 (lower is better)",
		"ratio 4.000 (lower is better)\n",
		"ratio 10.000 (lower is better)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "segment BenchmarkAppend ") || strings.Contains(got, "tcp-echo ") {
		t.Errorf("benchmarks used by a row are listed again under others:\n%s", got)
	}
}

func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		goal  string
		ratio float64
		want  string
	}{
		{">= 1.5", 1.497, "  goal >= 1.5 NOT MET"},
		{">= 1.5", 1.5, "  goal >= 1.5 met"},
		{"<= 2", 2.5, "  goal <= 2 NOT MET"},
		{"", 9, ""},
	} {
		if got := verdict(c.goal, c.ratio); got != c.want {
			t.Errorf("verdict(%q, %v) = %q, want %q", c.goal, c.ratio, got, c.want)
		}
	}
}
