// Command benchreport is `make bench`: it runs the go-test benchmarks of the
// storage and network hot paths and a franz-go client load against a Shale
// node and against franz-go's in-memory kfake cluster, and prints every
// figure beside its peer measured in the same run, with the ratio. Absolute
// figures drift on a shared machine; ratios drift much less.
//
//	go run ./internal/benchreport [-quick] [-records N] [-benchtime D] [-count N]
//
// See docs/benchmarks.md for what each line means.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/shale-io/shale/internal/loadbench"
)

type options struct {
	quick        bool
	benchtime    string
	count        int
	records      int
	phaseTimeout time.Duration
	shaleBin     string
	skipGoBench  bool
	skipLoad     bool
	rawPath      string
	serveKfake   bool
}

func main() {
	var o options
	flag.BoolVar(&o.quick, "quick", false, "short run: -benchtime 100ms, 50k records (a few minutes)")
	flag.StringVar(&o.benchtime, "benchtime", "", "go test -benchtime per benchmark (default 500ms, 100ms with -quick)")
	flag.IntVar(&o.count, "count", 3, "go test -count; the report uses medians")
	flag.IntVar(&o.records, "records", 0, "records of the load run (default 200000, 50000 with -quick)")
	flag.DurationVar(&o.phaseTimeout, "phase-timeout", 2*time.Minute, "bound on each load phase (produce, consume) per server")
	flag.StringVar(&o.shaleBin, "shale-bin", "", "shale binary; empty builds ./cmd/shale into a temporary dir")
	flag.BoolVar(&o.skipGoBench, "skip-gobench", false, "skip the go test benchmarks")
	flag.BoolVar(&o.skipLoad, "skip-load", false, "skip the client load benchmark")
	flag.StringVar(&o.rawPath, "raw", "", "also write the raw go test output to this file")
	flag.BoolVar(&o.serveKfake, "serve-kfake", false, "internal: run as the kfake child process")
	flag.Parse()

	cfg := loadbench.DefaultConfig()
	if o.serveKfake {
		if err := loadbench.ServeKfake(cfg); err != nil {
			fmt.Fprintln(os.Stderr, "kfake child:", err)
			os.Exit(1)
		}
		return
	}
	if o.benchtime == "" {
		o.benchtime = map[bool]string{false: "500ms", true: "100ms"}[o.quick]
	}
	if o.records == 0 {
		o.records = map[bool]int{false: 200_000, true: 50_000}[o.quick]
	}
	if err := run(context.Background(), os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, o options) error {
	start := time.Now()
	procs := runtime.GOMAXPROCS(0)
	fmt.Fprintf(w, "Shale benchmark report  %s  %s/%s  GOMAXPROCS=%d  NumCPU=%d\n",
		start.Format(time.RFC3339), runtime.GOOS, runtime.GOARCH, procs, runtime.NumCPU())
	fmt.Fprintln(w, "Every figure is beside its peer from the same run; read the ratios, not the absolute figures.")
	var failed []string
	if !o.skipGoBench {
		fmt.Fprintf(w, "\n== go test -bench (benchtime %s, count %d, medians) ==\n", o.benchtime, o.count)
		raw := io.Discard
		if o.rawPath != "" {
			f, err := os.Create(o.rawPath)
			if err != nil {
				return err
			}
			defer f.Close()
			raw = f
		}
		samples, err := runGoBench(ctx, o.benchtime, o.count, procs, raw)
		if err != nil {
			failed = append(failed, err.Error())
			fmt.Fprintf(w, "  WARNING: %v (figures below are from the packages that ran)\n", err)
		}
		med := Medians(samples)
		used := writeGoBench(w, med)
		for k := range writeGoals(w, med, goalRows) {
			used[k] = true
		}
		writeOthers(w, med, used)
	}
	if !o.skipLoad {
		if err := runLoad(ctx, w, o); err != nil {
			failed = append(failed, err.Error())
			fmt.Fprintf(w, "  FAILED: %v\n", err)
		}
	}
	fmt.Fprintf(w, "\nreport took %v\n", time.Since(start).Round(time.Second))
	if len(failed) > 0 {
		return fmt.Errorf("%d part(s) failed", len(failed))
	}
	return nil
}

// runLoad runs the client load against kfake, then against Shale, each a
// child process, and prints both with the ratios.
func runLoad(ctx context.Context, w io.Writer, o options) error {
	cfg := loadbench.DefaultConfig()
	cfg.Records, cfg.PhaseTimeout = o.records, o.phaseTimeout
	fmt.Fprintf(w, "\n== client load: franz-go, %d records x %d B, %d partitions, acks=all, no compression ==\n",
		cfg.Records, cfg.RecordBytes, cfg.Partitions)
	tmp, err := os.MkdirTemp("", "shale-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := o.shaleBin
	if bin == "" {
		bin = filepath.Join(tmp, "shale")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/shale")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/shale: %w", err)
		}
	}

	kf, err := loadbench.StartSelf(ctx, "-serve-kfake")
	if err != nil {
		return fmt.Errorf("start kfake: %w", err)
	}
	kres, kerr := loadbench.Run(ctx, kf, cfg)
	kf.Close()
	if kerr != nil {
		return fmt.Errorf("kfake: %w", kerr)
	}

	dir := filepath.Join(tmp, "node")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	node, err := loadbench.StartShale(ctx, bin, dir, cfg, loadbench.WithSASLSSL())
	if err != nil {
		return fmt.Errorf("start shale: %w", err)
	}
	defer node.Close()
	sres, serr := loadbench.Run(ctx, node, cfg)
	if serr != nil {
		return fmt.Errorf("shale: %w", serr)
	}
	writeLoad(w, sres, kres)
	if err := runSecurity(ctx, w, node, cfg, sres); err != nil {
		return err
	}
	return runQuota(ctx, w, bin, tmp, cfg)
}

// runSecurity runs the same load over the node's SASL_SSL listener, the
// SCRAM login rate beside plaintext connections, and the SASL_SSL load again
// under a flood of failed logins, and prints each beside its peer.
func runSecurity(ctx context.Context, w io.Writer, node *loadbench.Process, cfg loadbench.Config, plain loadbench.Result) error {
	sec := node.SASLSSL
	fmt.Fprintf(w, "\n== security: the same load over SASL_SSL (TLS, SCRAM-SHA-256) beside PLAINTEXT, same node ==\n")
	tcfg := cfg
	tcfg.Topic, tcfg.ClientOpts = "bench-tls", sec.ClientOpts()
	if err := node.CreateTopic(ctx, tcfg); err != nil {
		return err
	}
	tsrv := loadbench.At(node, sec.Addr)
	tres, err := loadbench.Run(ctx, tsrv, tcfg)
	if err != nil {
		return fmt.Errorf("SASL_SSL load: %w", err)
	}
	line := func(label string, sv, pv float64, unit, peer, dir, goal string) {
		ratio := 0.0
		if pv > 0 {
			ratio = sv / pv
		}
		fmt.Fprintf(w, "  %-30s %9.1f %-7s vs %-9s %9.1f %-7s ratio %5.3f (%s)%s\n", label, sv, unit, peer, pv, unit, ratio, dir, verdict(goal, ratio))
	}
	line("produce SASL_SSL", tres.Produce.MBps(), plain.Produce.MBps(), "MB/s", "PLAINTEXT", "higher is better", ">= 0.8")
	line("consume SASL_SSL (no sendfile)", tres.Consume.MBps(), plain.Consume.MBps(), "MB/s", "PLAINTEXT", "higher is better", "")
	line("server CPU/GB produced SASL_SSL", tres.Produce.CPUSecPerGB(), plain.Produce.CPUSecPerGB(), "CPU s", "PLAINTEXT", "lower is better", "")
	line("server CPU/GB consumed SASL_SSL", tres.Consume.CPUSecPerGB(), plain.Consume.CPUSecPerGB(), "CPU s", "PLAINTEXT", "lower is better", "")

	const logins = 300
	pc, err := loadbench.Connect(ctx, node, nil, logins, 2)
	if err != nil {
		return fmt.Errorf("plaintext connections: %w", err)
	}
	sc, err := loadbench.Connect(ctx, tsrv, sec.ClientOpts(), logins, 2)
	if err != nil {
		return fmt.Errorf("SCRAM logins: %w", err)
	}
	line("SCRAM-SHA-256 logins over TLS", sc.PerSec(), pc.PerSec(), "/s", "PLAINTEXT", "higher is better", "")
	line("server CPU per login", float64(sc.CPUPerLogin().Microseconds())/1000, float64(pc.CPUPerLogin().Microseconds())/1000, "ms", "PLAINTEXT", "lower is better", "")

	fcfg := tcfg
	fcfg.Topic = "bench-flood"
	if err := node.CreateTopic(ctx, fcfg); err != nil {
		return err
	}
	floodStart := time.Now()
	flood := loadbench.StartFlood(ctx, sec.Addr, sec.TLS, 2)
	fres, ferr := loadbench.Run(ctx, tsrv, fcfg)
	refused, other := flood.Stop()
	floodWall := time.Since(floodStart)
	if ferr != nil {
		return fmt.Errorf("SASL_SSL load under a login flood: %w", ferr)
	}
	line("produce SASL_SSL, login flood", fres.Produce.MBps(), tres.Produce.MBps(), "MB/s", "no flood", "higher is better", "")
	line("consume SASL_SSL, login flood", fres.Consume.MBps(), tres.Consume.MBps(), "MB/s", "no flood", "higher is better", "")
	fmt.Fprintf(w, "  (flood: %d failed logins refused, %.0f/s, %d other outcomes; wall: SASL_SSL produce %v consume %v, under flood %v %v; %d logins each)\n",
		refused, float64(refused)/floodWall.Seconds(), other,
		tres.Produce.Wall.Round(time.Millisecond), tres.Consume.Wall.Round(time.Millisecond),
		fres.Produce.Wall.Round(time.Millisecond), fres.Consume.Wall.Round(time.Millisecond), logins)
	if refused == 0 {
		return fmt.Errorf("the login flood made no refused login (%d other outcomes)", other)
	}
	return nil
}

func writeLoad(w io.Writer, s, k loadbench.Result) {
	line := func(label string, sv, kv float64, unit, dir, goal string) {
		ratio := 0.0
		if kv > 0 {
			ratio = sv / kv
		}
		fmt.Fprintf(w, "  %-30s shale %9.1f %-7s vs kfake %9.1f %-7s ratio %5.3f (%s)%s\n", label, sv, unit, kv, unit, ratio, dir, verdict(goal, ratio))
	}
	line("produce throughput", s.Produce.MBps(), k.Produce.MBps(), "MB/s", "higher is better", ">= 1.5")
	line("consume throughput", s.Consume.MBps(), k.Consume.MBps(), "MB/s", "higher is better", ">= 1.5")
	line("server CPU per GB produced", s.Produce.CPUSecPerGB(), k.Produce.CPUSecPerGB(), "CPU s", "lower is better", "")
	line("server CPU per GB consumed", s.Consume.CPUSecPerGB(), k.Consume.CPUSecPerGB(), "CPU s", "lower is better", "")
	fmt.Fprintf(w, "  (wall: shale produce %v consume %v; kfake produce %v consume %v)\n",
		s.Produce.Wall.Round(time.Millisecond), s.Consume.Wall.Round(time.Millisecond),
		k.Produce.Wall.Round(time.Millisecond), k.Consume.Wall.Round(time.Millisecond))
}
