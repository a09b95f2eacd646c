package main

import (
	"strings"
	"testing"
)

const sampleOutput = `goos: linux
goarch: amd64
pkg: github.com/shale-io/shale/segment/batch
cpu: AMD EPYC 7B13
BenchmarkParseVerify-2   	  200000	      5000 ns/op	3276.80 MB/s	       0 B/op	       0 allocs/op
BenchmarkParseVerify-2   	  200000	      4000 ns/op	4096.00 MB/s	       0 B/op	       0 allocs/op
BenchmarkParseVerify-2   	  200000	      6000 ns/op	2730.67 MB/s	       0 B/op	       0 allocs/op
BenchmarkCompress/zstd-2 	    1000	    100000 ns/op	 163.84 MB/s	         3.500 ratio
BenchmarkCompress/zstd-2 	    1000	    120000 ns/op	 136.53 MB/s	         3.500 ratio
PASS
ok  	github.com/shale-io/shale/segment/batch	3.1s
pkg: github.com/shale-io/shale/kafka
BenchmarkRoundTrip/tcp-echo-2  	   10000	     30000 ns/op	   5.00 MB/s
BenchmarkBroken-2 notanumber 12 ns/op
BenchmarkOdd-2 10 12 ns/op 7
--- FAIL: BenchmarkX
ok  	github.com/shale-io/shale/kafka	1.0s
`

func TestParseBench(t *testing.T) {
	got, err := ParseBench(strings.NewReader(sampleOutput), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Fatalf("got %d samples, want 6: %+v", len(got), got)
	}
	first := got[0]
	if first.Pkg != "github.com/shale-io/shale/segment/batch" || first.Name != "BenchmarkParseVerify" || first.N != 200000 {
		t.Fatalf("first sample %+v", first)
	}
	if first.Metrics["ns/op"] != 5000 || first.Metrics["MB/s"] != 3276.80 || first.Metrics["allocs/op"] != 0 {
		t.Fatalf("first metrics %v", first.Metrics)
	}
	if got[3].Name != "BenchmarkCompress/zstd" || got[3].Metrics["ratio"] != 3.5 {
		t.Fatalf("sub-benchmark %+v", got[3])
	}
	last := got[5]
	if last.Pkg != "github.com/shale-io/shale/kafka" || last.Name != "BenchmarkRoundTrip/tcp-echo" {
		t.Fatalf("dash inside a sub-benchmark name must survive: %+v", last)
	}
}

func TestParseBenchProcsOne(t *testing.T) {
	// With -cpu 1 go test prints no suffix, so a trailing number is part of the name.
	got, err := ParseBench(strings.NewReader("BenchmarkRead/size-4096 \t 10 \t 7 ns/op\n"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "BenchmarkRead/size-4096" {
		t.Fatalf("got %+v", got)
	}
}

func TestMedians(t *testing.T) {
	got, err := ParseBench(strings.NewReader(sampleOutput), 2)
	if err != nil {
		t.Fatal(err)
	}
	m := Medians(got)
	pv := m[Key{"github.com/shale-io/shale/segment/batch", "BenchmarkParseVerify"}]
	if pv["ns/op"] != 5000 || pv["MB/s"] != 3276.80 {
		t.Fatalf("odd count median: %v", pv)
	}
	z := m[Key{"github.com/shale-io/shale/segment/batch", "BenchmarkCompress/zstd"}]
	if z["ns/op"] != 110000 {
		t.Fatalf("even count median: %v", z)
	}
	if len(m) != 3 {
		t.Fatalf("got %d keys, want 3: %v", len(m), m)
	}
}
