package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestProduceConsume(t *testing.T) {
	addr := startCLINode(t)
	bs := []string{"--bootstrap", addr}
	with := func(args ...string) []string { return append(args, bs...) }
	cliOK(t, with("topic", "create", "events", "-p", "2")...)

	// Files, a key separator, headers, a fixed partition.
	golden(t, "produce_p0.txt", cliOK(t, with("produce", "events", "testdata/input_p0.txt", "-K", ":", "-H", "src=cli", "--header", "v=1", "-p", "0")...))
	var sum produceSummary
	if err := json.Unmarshal([]byte(cliOK(t, with("produce", "events", "testdata/input_p1.txt", "--key-separator", ":",
		"--partition", "1", "--compression", "gzip", "--acks", "1", "--output", "json")...)), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Records != 2 || len(sum.Partitions) != 1 || sum.Partitions[0] != (producePartition{Partition: 1, Records: 2, FirstOffset: 0, LastOffset: 1}) {
		t.Fatalf("summary %+v", sum)
	}

	// Formats: kcat-style verbs, a Go template, JSON lines.
	golden(t, "consume_p0.txt", cliOK(t, with("consume", "events", "-p", "0", "--until", "end", "-f", `%p %o %k=%v [%h] %H\n`)...))
	golden(t, "consume_template.txt", cliOK(t, with("consume", "events", "--until", "end", "--format",
		`{{.Partition}}/{{.Offset}} {{.Key}} {{index .Headers "src"}}\n`)...))
	lines := strings.Split(strings.TrimSpace(cliOK(t, with("consume", "events", "--until", "end", "--output", "json")...)), "\n")
	if len(lines) != 5 {
		t.Fatalf("json: %d lines, want 5", len(lines))
	}
	seen := map[string]bool{}
	for _, l := range lines {
		var r jsonRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if r.Key == nil || r.Value == nil || r.Timestamp <= 0 {
			t.Fatalf("json record %s", l)
		}
		seen[*r.Key+"="+*r.Value] = true
	}
	for _, kv := range []string{"alice=1", "bob=2", "carol=3", "dave=4", "erin=5"} {
		if !seen[kv] {
			t.Fatalf("json lacks %s: %v", kv, lines)
		}
	}

	// Starting points and ends.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", "-1", "--until", "end"}, "2:carol=3"},
		{[]string{"-o", "1", "--until", "end"}, "1:bob=2 2:carol=3"},
		{[]string{"--until", "2"}, "0:alice=1 1:bob=2"},
		{[]string{"-n", "2"}, "0:alice=1 1:bob=2"},
		{[]string{"-o", "end", "--until", "end"}, ""},
		{[]string{"-o", "start", "-n", "1", "--until", "end"}, "0:alice=1"},
	} {
		got := cliOK(t, with(append([]string{"consume", "events", "-p", "0", "-f", `%o:%k=%v `}, c.args...)...)...)
		if strings.TrimSpace(got) != c.want {
			t.Errorf("consume %v = %q, want %q", c.args, got, c.want)
		}
	}

	// From a timestamp: only what was written at or after it.
	mark := time.Now().UnixMilli() + 1
	for time.Now().UnixMilli() < mark {
		runtime.Gosched() // at most a millisecond: later records get later timestamps
	}
	var stdout, stderr bytes.Buffer
	if code := runIO(with("produce", "events", "-p", "0", "-K", ":"), strings.NewReader("frank:6\ngrace:7\n"), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if got := cliOK(t, with("consume", "events", "-p", "0", "-o", "@"+strconv.FormatInt(mark, 10), "--until", "end", "-f", `%o:%k `)...); strings.TrimSpace(got) != "3:frank 4:grace" {
		t.Fatalf("from @%d: %q", mark, got)
	}
	rfc := time.UnixMilli(mark).UTC().Format(time.RFC3339Nano)
	if got := cliOK(t, with("consume", "events", "-p", "0", "--until", "@"+rfc, "-f", `%o `)...); strings.TrimSpace(got) != "0 1 2" {
		t.Fatalf("until @%s: %q", rfc, got)
	}

	// Keyed records without --partition: the same key lands in one partition.
	if code := runIO(with("produce", "events", "-K", ":"), strings.NewReader("k:a\nk:b\nk:c\n"), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	got := cliOK(t, with("consume", "events", "--until", "end", "-f", `%k%p `)...)
	parts, ks := map[string]bool{}, 0
	for _, f := range strings.Fields(got) {
		if len(f) == 2 && f[0] == 'k' {
			parts[f] = true
			ks++
		}
	}
	if len(parts) != 1 || ks != 3 {
		t.Fatalf("key k spread over %v: %q", parts, got)
	}

	// acks=0: records arrive (-n waits for them: nothing acknowledged
	// them), but no offsets are known to report.
	if out := cliOK(t, with("produce", "events", "testdata/input_p1.txt", "-p", "1", "--acks", "0")...); !strings.Contains(out, "- (acks=0)") {
		t.Fatalf("acks=0 summary:\n%s", out)
	}
	if got := cliOK(t, with("consume", "events", "-p", "1", "-n", "4", "-f", `%o:%v `)...); got != "0:4 1:5 2:dave:4 3:erin:5 " {
		t.Fatalf("after acks=0: %q", got)
	}

	for _, args := range [][]string{{"consume"}, {"consume", "events", "--until", "start"}, {"consume", "events", "-p", "0", "--group", "g"},
		{"consume", "events", "-f", "%q"}, {"consume", "events", "-o", "soon"}, {"produce"}, {"produce", "events", "--acks", "2"},
		{"produce", "events", "-z", "brotli"}, {"produce", "events", "-H", "novalue"}} {
		if _, _, code := cliRun(t, with(args...)...); code != 2 {
			t.Errorf("shale %v: exit %d, want 2", args, code)
		}
	}
	if _, errOut, code := cliRun(t, with("consume", "nosuch", "--until", "end")...); code != 1 || !strings.Contains(errOut, "unknown topic") {
		t.Fatalf("unknown topic: exit %d: %s", code, errOut)
	}
	if _, _, code := cliRun(t, with("produce", "events", "testdata/missing.txt")...); code != 1 {
		t.Fatalf("missing file: exit %d", code)
	}
}
