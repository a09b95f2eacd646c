package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shale-io/shale/adminapi"
)

func TestTierStatusCommand(t *testing.T) {
	want := adminapi.TierStatus{NodeID: 1, Partitions: []adminapi.TierPartitionStatus{{Topic: "events", Partition: 3,
		LogStartOffset: 0, LocalLogStartOffset: 500, HighWatermark: 900, LastTieredOffset: 599, RemoteSegments: 6,
		RemoteBytes: 123456, UploadLagSegments: 1, UploadLagBytes: 4096, UploadLagOffsets: 300}}}
	var gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != adminapi.TierStatusPath {
			http.NotFound(w, r)
			return
		}
		gotQuery = r.URL.Query().Get("topic")
		json.NewEncoder(w).Encode(want)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	var out, errOut bytes.Buffer
	if code := run([]string{"tier", "status", "--admin", addr, "--topic", "events", "--output", "json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got adminapi.TierStatus
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if gotQuery != "events" || len(got.Partitions) != 1 || got.Partitions[0] != want.Partitions[0] {
		t.Fatalf("query %q, got %+v", gotQuery, got)
	}

	out.Reset()
	if code := run([]string{"tier", "status", "--admin", srv.URL}, &out, &errOut); code != 0 {
		t.Fatalf("text: exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "LOCAL-LOG-START") ||
		strings.Join(strings.Fields(lines[1]), " ") != "events 3 0 500 900 599 6 123456 1 4096 300" {
		t.Fatalf("text output:\n%s", out.String())
	}
	// Columns are left-aligned under their headers.
	if h, v := strings.Index(lines[0], "LOCAL-LOG-START"), strings.Index(lines[1], " 500 ")+1; h != v {
		t.Fatalf("LOCAL-LOG-START at column %d, its value at %d:\n%s", h, v, out.String())
	}
	if code := run([]string{"tier", "status", "--admin", "127.0.0.1:1"}, &out, &errOut); code != 1 {
		t.Fatalf("unreachable admin: exit %d", code)
	}
	if code := run([]string{"tier", "status", "--output", "yaml"}, &out, &errOut); code != 2 {
		t.Fatalf("bad --output: exit %d", code)
	}
}
