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

// RequestSamples is the samples of lines (an exposition, as MetricLines
// returns it) whose only label is request=api, by metric name: the request
// metrics of one API, kafka_network_requestmetrics_*{request="Produce"} 12.
// A value that does not parse fails tb.
func RequestSamples(tb testing.TB, lines []string, api string) map[string]float64 {
	tb.Helper()
	out := map[string]float64{}
	suffix := `{request="` + api + `"} `
	for _, line := range lines {
		name, rest, ok := strings.Cut(line, suffix)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(rest, 64)
		if err != nil {
			tb.Fatalf("%q: %v", line, err)
		}
		out[name] += v
	}
	return out
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
