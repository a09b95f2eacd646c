package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/sdk"
)

// TestParsePosition: positions are the SDK's (sdk.ParsePosition, tested
// there); text that is none is a usage error (exit 2).
func TestParsePosition(t *testing.T) {
	for in, want := range map[string]sdk.PositionKind{"earliest": sdk.PositionStart, "latest": sdk.PositionEnd, "42": sdk.PositionOffset,
		"-10": sdk.PositionFromEnd, "@2026-01-02T03:04:05Z": sdk.PositionTime} {
		if got, err := parsePosition(in); err != nil || got.Kind() != want {
			t.Errorf("parsePosition(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "soon", "@yesterday", "1.5"} {
		if _, err := parsePosition(bad); !errors.Is(err, errUsage) || !errors.Is(err, sdk.ErrInvalidPosition) {
			t.Errorf("parsePosition(%q) error %v, want errUsage", bad, err)
		}
	}
	if _, err := parsePartitions("0,x"); !errors.Is(err, errUsage) {
		t.Errorf("partitions 0,x: %v", err)
	}
	if ps, err := parsePartitions("0, 2,5"); err != nil || len(ps) != 3 || ps[1] != 2 {
		t.Errorf("partitions: %v %v", ps, err)
	}
}

func TestFormatter(t *testing.T) {
	r := &kgo.Record{Topic: "events", Partition: 2, Offset: 17, LeaderEpoch: 3, Key: []byte("k1"), Value: []byte("hello"),
		Timestamp: time.UnixMilli(1700000000123).UTC(),
		Headers:   []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("2")}}}
	for spec, want := range map[string]string{
		`%t/%p@%o e%e %k=%v (%K,%V) [%h] %H\n`: "events/2@17 e3 k1=hello (2,5) [a=1,b=2] 2\n",
		`%T %d %s %S 100%%\t.`:                 "1700000000123 2023-11-14T22:13:20.123Z hello 5 100%\t.",
		defaultFormat:                          "hello\n",
		`{{.Key}}={{.Value}} {{index .Headers "b"}} {{.Offset}}\n`:      "k1=hello 2 17\n",
		`{{range .HeaderList}}{{.Key}}{{end}} {{.Timestamp.UnixMilli}}`: "ab 1700000000123",
		`a\\n\x`: `a\n\x`,
	} {
		f, err := newFormatter(spec)
		if err != nil {
			t.Fatalf("newFormatter(%q): %v", spec, err)
		}
		var b bytes.Buffer
		if err := f(&b, r); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("format %q = %q, want %q", spec, b.String(), want)
		}
	}
	for _, bad := range []string{"%q", "50%", "{{.Nope"} {
		if _, err := newFormatter(bad); !errors.Is(err, errUsage) {
			t.Errorf("newFormatter(%q) error %v, want errUsage", bad, err)
		}
	}
	var b bytes.Buffer
	if err := appendJSONRecord(&b, &kgo.Record{Topic: "t", Value: []byte("v"), Timestamp: time.UnixMilli(5)}); err != nil {
		t.Fatal(err)
	}
	if want := `{"topic":"t","partition":0,"offset":0,"leader_epoch":0,"timestamp":5,"key":null,"value":"v","headers":[]}` + "\n"; b.String() != want {
		t.Errorf("json record %s, want %s", b.String(), want)
	}
}

func TestRenderProgress(t *testing.T) {
	for _, c := range []struct {
		done, total int64
		unit        string
		elapsed     time.Duration
		want        string
	}{
		{500, 1000, "records", 5 * time.Second, "[==========>         ]  50%  500/1000 records  100 records/s  ETA 5s"},
		{1000, 1000, "records", 2 * time.Second, "[====================] 100%  1000/1000 records  500 records/s  ETA 0s"},
		{0, 1000, "records", 0, "[>                   ]   0%  0/1000 records  0 records/s  ETA ?"},
		{3 << 20, 0, "bytes", time.Second, "3145728 bytes  3.0Mi bytes/s"},
		{25000, 0, "records", 10 * time.Second, "25000 records  2.5k records/s"},
	} {
		if got := renderProgress(c.done, c.total, c.unit, c.elapsed); got != c.want {
			t.Errorf("renderProgress(%d, %d, %s, %v)\n got %q\nwant %q", c.done, c.total, c.unit, c.elapsed, got, c.want)
		}
	}
	// Not a terminal: no bar, and a nil bar is a no-op.
	if p := newProgress(&bytes.Buffer{}, "records", 10); p != nil {
		t.Fatal("progress bar on a buffer")
	}
	var p *progress
	p.update(1)
	p.finish(1)
}

func TestProgressRedrawsAtInterval(t *testing.T) {
	var b bytes.Buffer
	now := time.Unix(100, 0)
	p := &progress{w: &b, unit: "records", total: 10, start: now, interval: time.Second, now: func() time.Time { return now }}
	p.update(1)
	p.update(2) // same instant: skipped
	now = now.Add(time.Second)
	p.update(3)
	p.finish(10)
	if got := strings.Count(b.String(), "\r"); got != 3 {
		t.Fatalf("%d redraws, want 3: %q", got, b.String())
	}
	if !strings.HasSuffix(b.String(), "100%  10/10 records  10 records/s  ETA 0s\x1b[K\n") {
		t.Fatalf("final line %q", b.String())
	}
}

// TestAdminTokenFileWithRole: --admin-token-file may be a line of the
// node's tokens file, a token and its role: the token alone is sent.
func TestAdminTokenFileWithRole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("# viewer\n  read-token-0123456789abcdef  read\nother-token-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _, err := (&adminAddrs{tokenFile: path}).client(time.Second)
	if err != nil || c.Token != "read-token-0123456789abcdef" {
		t.Fatalf("token %q, %v; want the first line's token without its role", c.Token, err)
	}
}
