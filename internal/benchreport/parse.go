package main

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Sample is one line of `go test -bench` output: one run of one benchmark.
type Sample struct {
	Pkg     string             // import path from the preceding "pkg:" line
	Name    string             // full name without the "-<procs>" suffix, e.g. "BenchmarkCompress/zstd"
	N       int64              // iterations
	Metrics map[string]float64 // value by unit: "ns/op", "MB/s", "B/op", custom units
}

// Key names one benchmark of one package.
type Key struct{ Pkg, Name string }

// ParseBench reads `go test -bench` output and returns every benchmark line
// in order. procs is the -cpu value the run used: a trailing "-<procs>" is
// removed from names (go test omits it when procs is 1, so nothing is removed
// then). Lines that are not benchmark results are ignored, as are malformed
// ones (a name without an iteration count or with odd value/unit pairs).
func ParseBench(r io.Reader, procs int) ([]Sample, error) {
	var out []Sample
	pkg := ""
	suffix := ""
	if procs > 1 {
		suffix = "-" + strconv.Itoa(procs)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		if s, ok := parseLine(line, suffix); ok {
			s.Pkg = pkg
			out = append(out, s)
		}
	}
	return out, sc.Err()
}

// parseLine parses "BenchmarkX-2  100  123 ns/op  4.5 MB/s ...".
func parseLine(line, suffix string) (Sample, bool) {
	if !strings.HasPrefix(line, "Benchmark") {
		return Sample{}, false
	}
	f := strings.Fields(line)
	if len(f) < 4 || len(f)%2 != 0 {
		return Sample{}, false
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return Sample{}, false
	}
	s := Sample{Name: strings.TrimSuffix(f[0], suffix), N: n, Metrics: map[string]float64{}}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return Sample{}, false
		}
		s.Metrics[f[i+1]] = v
	}
	return s, true
}

// Medians groups samples by package and name and returns, for each, the
// median of every unit over the runs (-count). With an even number of runs
// the median is the mean of the two middle values.
func Medians(samples []Sample) map[Key]map[string]float64 {
	vals := map[Key]map[string][]float64{}
	for _, s := range samples {
		k := Key{s.Pkg, s.Name}
		if vals[k] == nil {
			vals[k] = map[string][]float64{}
		}
		for u, v := range s.Metrics {
			vals[k][u] = append(vals[k][u], v)
		}
	}
	out := make(map[Key]map[string]float64, len(vals))
	for k, units := range vals {
		out[k] = map[string]float64{}
		for u, vs := range units {
			out[k][u] = median(vs)
		}
	}
	return out
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
