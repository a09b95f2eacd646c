package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/shale-io/shale/broker"
)

// tierStatus runs `shale tier status [--topic T] [--admin ADDR] [--output json]`:
// per partition of the node behind ADDR, its log start, local log start,
// high watermark, remote segments and bytes, and upload lag, read from the
// node's admin endpoint.
func tierStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shale tier status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	topic := fs.String("topic", "", "only this topic")
	admin := fs.String("admin", "127.0.0.1:9644", "the node's admin HTTP address (host:port or URL)")
	output := fs.String("output", "text", "text or json")
	timeout := fs.Duration("timeout", 10*time.Second, "request timeout")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *output != "text" && *output != "json" {
		fmt.Fprintf(stderr, "shale tier status: --output %q: want text or json\n", *output)
		return 2
	}
	st, err := fetchTierStatus(*admin, *topic, *timeout)
	if err != nil {
		fmt.Fprintf(stderr, "shale tier status: %v\n", err)
		return 1
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil {
			return 1
		}
		return 0
	}
	writeTierStatus(stdout, st)
	return 0
}

func fetchTierStatus(admin, topic string, timeout time.Duration) (broker.TierStatus, error) {
	var st broker.TierStatus
	base, err := url.Parse(admin)
	if err != nil || base.Scheme == "" || base.Host == "" {
		base = &url.URL{Scheme: "http", Host: admin}
	}
	u := base.JoinPath(broker.TierStatusPath)
	if topic != "" {
		u.RawQuery = url.Values{"topic": {topic}}.Encode()
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return st, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return st, fmt.Errorf("GET %s: %s: %s", u, resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("GET %s: decoding: %w", u, err)
	}
	return st, nil
}

func writeTierStatus(w io.Writer, st broker.TierStatus) {
	t := newTable(w, "TOPIC", "PARTITION", "LOG-START", "LOCAL-LOG-START", "HIGH-WATERMARK", "LAST-TIERED",
		"REMOTE-SEGMENTS", "REMOTE-BYTES", "UPLOAD-LAG-SEGMENTS", "UPLOAD-LAG-BYTES", "UPLOAD-LAG-OFFSETS")
	for _, p := range st.Partitions {
		t.row(p.Topic, p.Partition, p.LogStartOffset, p.LocalLogStartOffset, p.HighWatermark, p.LastTieredOffset,
			p.RemoteSegments, p.RemoteBytes, p.UploadLagSegments, p.UploadLagBytes, p.UploadLagOffsets)
	}
	t.flush()
}
