// Command shale-chaos is Shale's chaos suite: it starts its own cluster
// (NATS, versitygw, shale serve processes, all on 127.0.0.1), runs a
// workload, injects faults on a seeded schedule, heals, checks the history
// and writes a verdict. See docs/reliability.md.
//
// It is a binary of its own, not a `shale` subcommand, while cmd/shale moves
// onto cobra; it can become `shale chaos` later.
//
//	shale-chaos run [--schedule NAME] [--duration D] [--seed N] [--nodes 3|5] [--out DIR]
//	shale-chaos list
//	shale-chaos check history.json
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/shale-io/shale/chaos"
)

func main() {
	chaos.MaybeRunChild()
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = run(os.Args[2:])
	case "list":
		for _, s := range chaos.Schedules {
			fmt.Printf("%-12s nodes=%d  %s\n", s.Name, s.Nodes, s.About)
		}
	case "check":
		err = check(os.Args[2:])
	default:
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "shale-chaos:", err)
		if errors.Is(err, errViolations) {
			os.Exit(1)
		}
		os.Exit(2)
	}
}

var errViolations = errors.New("violations found")

func usage() {
	fmt.Fprintln(os.Stderr, "usage: shale-chaos run [--schedule NAME] [--duration D] [--seed N] [--nodes N] [--out DIR] | list | check history.json")
}

func run(args []string) error {
	fs := flag.NewFlagSet("shale-chaos run", flag.ContinueOnError)
	schedule := fs.String("schedule", "smoke", "schedule name (shale-chaos list)")
	duration := fs.Duration("duration", 60*time.Second, "fault phase")
	seed := fs.Int64("seed", time.Now().UnixNano()%1_000_000, "schedule seed")
	nodes := fs.Int("nodes", 0, "cluster size (0: the schedule's)")
	out := fs.String("out", "", "run directory (default chaos-runs/<schedule>-<seed>)")
	shale := fs.String("shale", "", "shale binary (default: bin/shale beside this binary, then PATH)")
	versity := fs.String("versitygw", "", "versitygw binary (default: $SHALE_VERSITYGW, bin/versitygw beside this binary, then PATH)")
	rate := fs.Int("rate", 20, "records per second per producer")
	producers := fs.Int("producers", 2, "producers")
	natsCluster := fs.Bool("nats-cluster", false, "three NATS servers instead of one")
	keep := fs.Bool("keep-data", false, "keep data dirs after a passing run")
	txns := fs.Bool("transactions", false, "add the transactional read-process-write workload and its exactly-once check")
	shares := fs.Bool("share-groups", false, "add the share group workload (KIP-932) and its checks")
	wide := fs.Int("wide", 0, "add a topic of this many partitions (RF=3) to the workload")
	if err := fs.Parse(args); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if *shale == "" {
		*shale = find(self, "shale", "")
	}
	if *versity == "" {
		*versity = find(self, "versitygw", os.Getenv("SHALE_VERSITYGW"))
	}
	if *out == "" {
		*out = filepath.Join("chaos-runs", fmt.Sprintf("%s-%d", *schedule, *seed))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	abs, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	v, err := chaos.Run(ctx, chaos.Config{Schedule: *schedule, Seed: *seed, Duration: *duration, Nodes: *nodes, Out: abs,
		Shale: *shale, VersityGW: *versity, Self: self, Rate: *rate, Producers: *producers, NATSCluster: *natsCluster,
		KeepData: *keep, Transactions: *txns, ShareGroups: *shares, WidePartitions: int32(*wide), Log: os.Stdout})
	if err != nil {
		return err
	}
	for _, vi := range v.Violations {
		fmt.Println("  ", vi)
	}
	fmt.Println(v.Summary())
	fmt.Println("verdict:", filepath.Join(abs, "verdict.json"), "timeline:", filepath.Join(abs, "timeline.svg"))
	if v.Total > 0 {
		return errViolations
	}
	return nil
}

// find looks for a binary: env, then bin/ beside self, then PATH.
func find(self, name, env string) string {
	if env != "" {
		return env
	}
	if p := filepath.Join(filepath.Dir(self), name); fileExists(p) {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return name
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// check re-runs the checker on a saved history.
func check(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("check wants one history.json")
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	var h chaos.History
	if err := json.Unmarshal(b, &h); err != nil {
		return err
	}
	r := chaos.Check(&h)
	for _, v := range r.Violations {
		fmt.Println(v)
	}
	fmt.Printf("%d violations %v\n", r.Total(), r.Counts)
	if r.Total() > 0 {
		return errViolations
	}
	return nil
}
