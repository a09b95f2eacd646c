package main

import (
	"strings"
	"testing"
)

func TestWriteGoals(t *testing.T) {
	out := `pkg: github.com/shale-io/shale/internal/replicationtest
BenchmarkReplicatedProduce/rf1-acks-1-2 1000 3000 ns/op 300.00 MB/s 300000 records/s
BenchmarkReplicatedProduce/rf3-acks-all-2 1000 6000 ns/op 150.00 MB/s 150000 records/s
BenchmarkReplicatedProduce/rf3-acks-all-fixed-rate-2 1 3000000000 ns/op 6.5 p50-ms 25.0 p99-ms 40.0 p999-ms 75000 records/s 70 bench-cpu-% 95 machine-cpu-%
BenchmarkReplicatedProduce/rf3-acks-all-1000rps-2 1 3000000000 ns/op 1.5 p50-ms 4.0 p99-ms 9.0 p999-ms 1000 records/s
pkg: github.com/shale-io/shale/internal/clustertest
BenchmarkScaleOut-2 1 0 ns/op 21000 scale-out-ms 33000 drain-ms
`
	samples, err := ParseBench(strings.NewReader(out), 2)
	if err != nil {
		t.Fatal(err)
	}
	med := Medians(samples)
	var b strings.Builder
	used := writeGoBench(&b, med)
	for k := range writeGoals(&b, med, goalRows) {
		used[k] = true
	}
	writeOthers(&b, med, used)
	got := b.String()
	for _, want := range []string{
		// RF3/RF1 throughput beside each other.
		"ratio 0.500 (higher is better)",
		// Half max rate: p99 25 ms against 10 ms.
		"ratio 2.500 (p99/goal, lower is better)  goal <= 1 NOT MET",
		"p50 6.5 ms  p999 40.0 ms  records 75000/s  bench-cpu 70%  machine-cpu 95%",
		// 1000 records/s: 4 ms against 10 ms, no CPU figures reported.
		"ratio 0.400 (p99/goal, lower is better)  goal <= 1 met",
		"p50 1.5 ms  p999 9.0 ms  records 1000/s\n",
		// Scale-out and drain, each against 30 s.
		"scale-out   21000.0 ms  vs goal 30000.0 ms         ratio 0.700 (scale-out/goal, lower is better)  goal <= 1 met",
		"drain   33000.0 ms  vs goal 30000.0 ms         ratio 1.100 (drain/goal, lower is better)  goal <= 1 NOT MET",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "fixed-rate ") || strings.Contains(got, "1000rps ") {
		t.Errorf("benchmarks used by a goal line are listed again under others:\n%s", got)
	}
}

func TestWriteGoalsMissing(t *testing.T) {
	var b strings.Builder
	med := map[Key]map[string]float64{
		{modPath + "internal/replicationtest", "BenchmarkReplicatedProduce/rf3-acks-all-1000rps"}: {"ns/op": 1},
	}
	writeGoals(&b, med, goalRows)
	got := b.String()
	for _, want := range []string{
		"MISSING: no BenchmarkReplicatedProduce/rf3-acks-all-fixed-rate in ./internal/replicationtest",
		"BenchmarkReplicatedProduce/rf3-acks-all-1000rps reports no p99-ms",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}
