package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
)

// benchPackages are the packages whose `go test -bench` figures the report reads.
var benchPackages = []string{"./segment", "./segment/batch", "./kafka", "./ingest", "./fetch"}

// runGoBench runs every benchmark of benchPackages once per count with the
// given -benchtime and -cpu procs, copying the raw output to raw, and returns
// the parsed samples. A package that fails to build or whose benchmarks fail
// is reported in the returned error, but the samples of the others are kept.
// slowBenchPackages run with their own fixed -benchtime and one count: each
// iteration is a whole workload (a cold replay through an S3 server).
var slowBenchPackages = map[string]string{"./internal/tieringe2e": "2x", "./internal/replicationtest": "500ms", "./internal/clustertest": "1x"}

func runGoBench(ctx context.Context, benchtime string, count, procs int, raw io.Writer) ([]Sample, error) {
	samples, err := runGoBenchPkgs(ctx, benchtime, count, procs, raw, benchPackages)
	for pkg, bt := range slowBenchPackages {
		more, serr := runGoBenchPkgs(ctx, bt, 1, procs, raw, []string{pkg})
		samples = append(samples, more...)
		if err == nil {
			err = serr
		}
	}
	return samples, err
}

func runGoBenchPkgs(ctx context.Context, benchtime string, count, procs int, raw io.Writer, pkgs []string) ([]Sample, error) {
	args := []string{"test", "-run", "^$", "-bench", ".", "-benchtime", benchtime,
		"-count", strconv.Itoa(count), "-cpu", strconv.Itoa(procs)}
	args = append(args, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	var out bytes.Buffer
	cmd.Stdout = io.MultiWriter(&out, raw)
	cmd.Stderr = io.MultiWriter(&out, raw)
	runErr := cmd.Run()
	samples, err := ParseBench(&out, procs)
	if err != nil {
		return samples, err
	}
	if runErr != nil {
		return samples, fmt.Errorf("go %v: %w", args, runErr)
	}
	return samples, nil
}
