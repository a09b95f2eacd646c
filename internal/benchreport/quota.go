package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/shale-io/shale/internal/loadbench"
)

// quotaRate is the byte-rate quota of the quota phases: well below what
// the machine moves unthrottled, so that the quota and not the machine
// sets the pace.
const quotaRate = 4 << 20

// runQuota runs a node of its own with 100 ms quota windows and measures
// what a franz-go producer and then a consumer held to a byte-rate quota
// get once their first burst is spent, beside the configured rate.
func runQuota(ctx context.Context, w io.Writer, bin, tmp string, cfg loadbench.Config) error {
	fmt.Fprintf(w, "\n== quotas: franz-go as fast as allowed under a %d B/s client-id quota, 100 ms windows, after the first throttle ==\n", quotaRate)
	dir := filepath.Join(tmp, "quota-node")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	qcfg := cfg
	qcfg.Topic = "bench-quota"
	node, err := loadbench.StartShale(ctx, bin, dir, qcfg, loadbench.WithServeArgs("--quota-window-size", "100ms"))
	if err != nil {
		return fmt.Errorf("start shale: %w", err)
	}
	defer node.Close()
	for _, k := range []string{"producer_byte_rate", "consumer_byte_rate"} {
		if err := loadbench.SetClientQuota(ctx, node, qcfg, "bench-quota", k, quotaRate); err != nil {
			return fmt.Errorf("set %s: %w", k, err)
		}
	}
	line := func(label string, p loadbench.QuotaPhase) {
		ratio := p.Rate() / p.Quota
		fmt.Fprintf(w, "  %-30s %9.2f MB/s vs quota %9.2f MB/s ratio %5.3f (1 is exact)  goal >= 0.9 and <= 1.1 %s\n",
			label, p.Rate()/1e6, p.Quota/1e6, ratio, map[bool]string{true: "met", false: "NOT MET"}[ratio >= 0.9 && ratio <= 1.1])
		fmt.Fprintf(w, "  %-30s (%d value bytes over %v after a burst of %d, %d throttles)\n", "", p.Bytes, p.Steady.Round(time.Millisecond), p.Burst, p.Throttles)
	}
	prod, err := loadbench.ProduceUnderQuota(ctx, node, qcfg, "bench-quota", quotaRate, 10*time.Second)
	if err != nil {
		return fmt.Errorf("produce under a quota: %w", err)
	}
	line("produce, producer_byte_rate", prod)
	cons, err := loadbench.ConsumeUnderQuota(ctx, node, qcfg, "bench-quota", quotaRate, 8*time.Second)
	if err != nil {
		return fmt.Errorf("consume under a quota: %w", err)
	}
	line("consume, consumer_byte_rate", cons)
	return nil
}
