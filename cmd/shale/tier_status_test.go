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
	events := adminapi.TierPartitionStatus{Topic: "events", Partition: 3,
		LogStartOffset: 0, LocalLogStartOffset: 500, HighWatermark: 900, LastTieredOffset: 599, RemoteSegments: 6,
		RemoteBytes: 123456, UploadLagSegments: 1, UploadLagBytes: 4096, UploadLagOffsets: 300}
	offsets := adminapi.TierPartitionStatus{Topic: "__consumer_offsets", Partition: 7, LogStartOffset: 0, LocalLogStartOffset: 0,
		HighWatermark: 12, LastTieredOffset: -1}
	node := func(id int32, parts ...adminapi.TierPartitionStatus) (*httptest.Server, *string) {
		var gotQuery string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != adminapi.TierStatusPath {
				http.NotFound(w, r)
				return
			}
			gotQuery = r.URL.Query().Get("topic")
			json.NewEncoder(w).Encode(adminapi.TierStatus{NodeID: id, Partitions: parts})
		}))
		t.Cleanup(srv.Close)
		return srv, &gotQuery
	}
	srv1, query1 := node(1, offsets, events)
	srv2, query2 := node(2, events)
	addr1, addr2 := strings.TrimPrefix(srv1.URL, "http://"), strings.TrimPrefix(srv2.URL, "http://")

	var out, errOut bytes.Buffer
	if code := run([]string{"tier", "status", "--admin", addr1 + "," + addr2, "--topic", "events", "--output", "json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got []adminapi.TierStatus
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if *query1 != "events" || *query2 != "events" || len(got) != 2 || got[0].NodeID != 1 || got[1].NodeID != 2 ||
		len(got[0].Partitions) != 1 || got[0].Partitions[0] != events || len(got[1].Partitions) != 1 {
		t.Fatalf("queries %q %q, got %+v", *query1, *query2, got)
	}

	// Internal topics are shown only with --internal.
	out.Reset()
	if code := run([]string{"tier", "status", "--admin", srv1.URL, "--admin", srv2.URL}, &out, &errOut); code != 0 {
		t.Fatalf("text: exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "LOCAL-LOG-START") ||
		strings.Join(strings.Fields(lines[1]), " ") != "1 events 3 0 500 900 599 6 123456 1 4096 300" ||
		!strings.HasPrefix(lines[2], "2 ") {
		t.Fatalf("text output:\n%s", out.String())
	}
	// Columns are left-aligned under their headers.
	if h, v := strings.Index(lines[0], "LOCAL-LOG-START"), strings.Index(lines[1], " 500 ")+1; h != v {
		t.Fatalf("LOCAL-LOG-START at column %d, its value at %d:\n%s", h, v, out.String())
	}
	out.Reset()
	if code := run([]string{"tier", "status", "--admin", srv1.URL, "--internal"}, &out, &errOut); code != 0 ||
		!strings.Contains(out.String(), "__consumer_offsets") {
		t.Fatalf("--internal: exit %d:\n%s", code, out.String())
	}

	// A node that does not answer is named on stderr; the others print.
	out.Reset()
	errOut.Reset()
	if code := run([]string{"tier", "status", "--admin", addr1 + ",127.0.0.1:1"}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "127.0.0.1:1") || !strings.Contains(out.String(), "events") {
		t.Fatalf("one node unreachable: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if code := run([]string{"tier", "status", "--output", "yaml"}, &out, &errOut); code != 2 {
		t.Fatalf("bad --output: exit %d", code)
	}
}
