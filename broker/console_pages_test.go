package broker_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestConsolePagesBoundedAt10000Partitions: with a topic of 10,000
// partitions (1,000 in make test, where the race detector makes creating
// 10,000 take most of a minute; 10,000 with proctest.LongEnv), every
// console page the browser loads stays bounded in bytes
// (sizes, not times): the topic's default page holds 50 partitions and its
// largest 500, the topic list and the cluster page do not grow with the
// partitions, and walking the pages by their cursors visits each partition
// once; so for a group with an offset on every partition: its page holds
// 50 partitions (500 at most), the group list one line, and its cursor
// visits each partition once.
func TestConsolePagesBoundedAt10000Partitions(t *testing.T) {
	parts := proctest.Rounds(1000, 10000)
	start := time.Now()
	n := testnode.Start(t, filepath.Join(t.TempDir(), "node"))
	ctx := proctest.Context(t, time.Duration(proctest.Rounds(3, 8))*time.Minute)
	cl := testnode.Client(t, n.KafkaAddr())
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, int32(parts), 1, nil, "big"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	t.Logf("%v: created", time.Since(start))
	base := "http://" + n.AdminAddr()
	get := func(path string) []byte {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v %s", path, resp.StatusCode, err, b)
		}
		return b
	}
	var cc adminapi.ConsoleCluster
	if err := proctest.Poll(60*time.Second, 100*time.Millisecond, func() bool {
		json.Unmarshal(get(adminapi.ConsoleClusterPath), &cc)
		return cc.Partitions >= parts
	}); err != nil {
		t.Fatalf("the cluster page counts %d partitions: %v", cc.Partitions, err)
	}
	t.Logf("%v: the cluster page counts them", time.Since(start))
	for _, tc := range []struct {
		path       string
		partitions int
		maxBytes   int
	}{
		{adminapi.ConsoleTopicPath + "?topic=big", adminapi.ConsoleDefaultLimit, 64 << 10},
		{fmt.Sprintf("%s?topic=big&limit=%d", adminapi.ConsoleTopicPath, adminapi.ConsoleMaxLimit), adminapi.ConsoleMaxLimit, 512 << 10},
		// The cursor is the last partition of the page before.
		{fmt.Sprintf("%s?topic=big&cursor=%d", adminapi.ConsoleTopicPath, parts-11), 10, 16 << 10},
		{adminapi.ConsoleTopicsPath + "?internal=1", -1, 64 << 10},
		{adminapi.ConsoleClusterPath, -1, 16 << 10},
	} {
		b := get(tc.path)
		t.Logf("GET %s: %d bytes", tc.path, len(b))
		if len(b) > tc.maxBytes {
			t.Fatalf("GET %s: %d bytes, want at most %d", tc.path, len(b), tc.maxBytes)
		}
		if tc.partitions >= 0 {
			var d adminapi.ConsoleTopicDetail
			if err := json.Unmarshal(b, &d); err != nil || len(d.Partitions) != tc.partitions {
				t.Fatalf("GET %s: %d partitions (%v), want %d", tc.path, len(d.Partitions), err, tc.partitions)
			}
		}
	}
	// Every partition once, by the cursors of the largest pages.
	seen, pages, cursor := make([]bool, parts), 0, int32(-2)
	for cursor != -1 && pages <= parts/adminapi.ConsoleMaxLimit {
		path := fmt.Sprintf("%s?topic=big&limit=%d", adminapi.ConsoleTopicPath, adminapi.ConsoleMaxLimit)
		if cursor >= 0 {
			path += fmt.Sprintf("&cursor=%d", cursor)
		}
		var d adminapi.ConsoleTopicDetail
		if err := json.Unmarshal(get(path), &d); err != nil {
			t.Fatal(err)
		}
		for _, p := range d.Partitions {
			if seen[p.Partition] {
				t.Fatalf("partition %d on two pages", p.Partition)
			}
			seen[p.Partition] = true
		}
		pages++
		cursor = d.Next
	}
	for p, ok := range seen {
		if !ok {
			t.Fatalf("partition %d on no page (%d pages, last cursor %d)", p, pages, cursor)
		}
	}
	if pages != parts/adminapi.ConsoleMaxLimit {
		t.Fatalf("%d pages of %d, want %d", pages, adminapi.ConsoleMaxLimit, parts/adminapi.ConsoleMaxLimit)
	}

	// A group with an offset on every partition: its page is bounded too,
	// and its cursor visits each partition once.
	offs := kadm.Offsets{}
	for p := range int32(parts) {
		offs.Add(kadm.Offset{Topic: "big", Partition: p, At: 0, LeaderEpoch: -1})
	}
	t.Logf("%v: topic pages walked", time.Since(start))
	// The first commit creates __consumer_offsets: NOT_COORDINATOR until
	// its partition is led and loaded.
	var cerr error
	if err := proctest.Poll(2*time.Minute, 100*time.Millisecond, func() bool {
		r, err := kadm.NewClient(cl).CommitOffsets(ctx, "wide", offs)
		cerr = errors.Join(err, r.Error())
		return cerr == nil
	}); err != nil {
		t.Fatalf("commit: %v", cerr)
	}
	t.Logf("%v: committed", time.Since(start))
	for _, tc := range []struct {
		path       string
		partitions int
		maxBytes   int
	}{
		{adminapi.ConsoleGroupPath + "?group=wide", adminapi.ConsoleDefaultLimit, 16 << 10},
		{fmt.Sprintf("%s?group=wide&limit=%d", adminapi.ConsoleGroupPath, adminapi.ConsoleMaxLimit), adminapi.ConsoleMaxLimit, 128 << 10},
		{fmt.Sprintf("%s?group=wide&cursor=big/%d", adminapi.ConsoleGroupPath, parts-11), 10, 4 << 10},
		{adminapi.ConsoleGroupsPath, -1, 4 << 10},
	} {
		t0 := time.Now()
		b := get(tc.path)
		t.Logf("GET %s: %d bytes in %v", tc.path, len(b), time.Since(t0))
		if len(b) > tc.maxBytes {
			t.Fatalf("GET %s: %d bytes, want at most %d", tc.path, len(b), tc.maxBytes)
		}
		if tc.partitions >= 0 {
			var d adminapi.ConsoleGroupDetail
			if err := json.Unmarshal(b, &d); err != nil || len(d.Partitions) != tc.partitions || d.Group.Partitions != parts {
				t.Fatalf("GET %s: %d partitions of %d (%v), want %d of %d", tc.path, len(d.Partitions), d.Group.Partitions, err, tc.partitions, parts)
			}
		} else {
			var gs adminapi.ConsoleGroups
			if err := json.Unmarshal(b, &gs); err != nil || len(gs.Groups) != 1 || gs.Groups[0].Partitions != parts {
				t.Fatalf("GET %s: %s", tc.path, b)
			}
		}
	}
	seen, pages = make([]bool, parts), 0
	for gcursor := "-"; gcursor != "" && pages <= parts/adminapi.ConsoleMaxLimit; pages++ {
		path := fmt.Sprintf("%s?group=wide&limit=%d", adminapi.ConsoleGroupPath, adminapi.ConsoleMaxLimit)
		if gcursor != "-" {
			path += "&cursor=" + gcursor
		}
		var d adminapi.ConsoleGroupDetail
		if err := json.Unmarshal(get(path), &d); err != nil {
			t.Fatal(err)
		}
		for _, p := range d.Partitions {
			if seen[p.Partition] {
				t.Fatalf("the group's partition %d on two pages", p.Partition)
			}
			seen[p.Partition] = true
		}
		gcursor = d.Next
	}
	for p, ok := range seen {
		if !ok {
			t.Fatalf("the group's partition %d on no page (%d pages)", p, pages)
		}
	}
	t.Logf("%v: the group's pages walked", time.Since(start))
	if pages != parts/adminapi.ConsoleMaxLimit {
		t.Fatalf("the group: %d pages of %d, want %d", pages, adminapi.ConsoleMaxLimit, parts/adminapi.ConsoleMaxLimit)
	}
}
