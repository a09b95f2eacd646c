package proctest

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Metrics scrapes the live run's /metrics and returns its samples without
// labels, by name; an unreachable node gives an empty map.
func (n *Node) Metrics() map[string]float64 {
	out := map[string]float64{}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + n.admin + "/metrics")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[name] = f
		}
	}
	return out
}

// MetricLines scrapes the live run's /metrics and returns the exposition's
// lines, failing tb when the node does not answer.
func (n *Node) MetricLines(tb testing.TB) []string {
	tb.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + n.admin + "/metrics")
	if err != nil {
		tb.Fatalf("scraping %s: %v", n.admin, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		tb.Fatalf("scraping %s: %v", n.admin, err)
	}
	return strings.Split(string(body), "\n")
}

// RSSFile is the live run's file-backed resident memory in bytes
// (RssFile in /proc/<pid>/status: mapped file pages it touched), or -1.
func (n *Node) RSSFile() int64 {
	cmd := n.proc.Cmd()
	if cmd == nil || cmd.Process == nil {
		return -1
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return kb << 10
		}
	}
	return -1
}
