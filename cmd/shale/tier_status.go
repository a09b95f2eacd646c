package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/shale-io/shale/adminapi"
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
	st, err := adminapi.Client{Timeout: *timeout}.TierStatus(context.Background(), *admin, *topic)
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

func writeTierStatus(w io.Writer, st adminapi.TierStatus) {
	t := newTable(w, "TOPIC", "PARTITION", "LOG-START", "LOCAL-LOG-START", "HIGH-WATERMARK", "LAST-TIERED",
		"REMOTE-SEGMENTS", "REMOTE-BYTES", "UPLOAD-LAG-SEGMENTS", "UPLOAD-LAG-BYTES", "UPLOAD-LAG-OFFSETS")
	for _, p := range st.Partitions {
		t.row(p.Topic, p.Partition, p.LogStartOffset, p.LocalLogStartOffset, p.HighWatermark, p.LastTieredOffset,
			p.RemoteSegments, p.RemoteBytes, p.UploadLagSegments, p.UploadLagBytes, p.UploadLagOffsets)
	}
	t.flush()
}
