package tieringe2e

import (
	"bufio"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/objstore/objstoretest"
)

// TestS3OutageS3 stops the S3 server (versitygw) under a `shale serve`
// child for many tiering passes while records keep coming, with a small
// local retention, then starts it again (issue 16 item 9). During the
// outage: produce goes on, the local log keeps everything not uploaded
// (local retention deletes nothing that is not in the bucket) and no more
// than that plus the hot tail, the remote metadata gains at most one record
// for the partition (it used to gain one per pass), and the node logs the
// outage once and shows it in shale_tiering_bucket_unreachable. After it:
// uploads resume by themselves, the local disk shrinks back to the hot tail,
// every record reads back from offset 0 through the cold tier, and the
// bucket holds exactly what the metadata references.
func TestS3OutageS3(t *testing.T) {
	const (
		topic      = "outage"
		sessionTTL = 3 * time.Second
		before     = 10_000 // records tiered before the outage
		during     = 12_000 // records produced while the bucket is down
	)
	env := startS3(t)
	mc := minioClient(t, env.srv.Endpoint)
	dataDir := t.TempDir()
	n := newChildNode(t, dataDir, "--s3-endpoint", env.srv.Endpoint, "--s3-bucket", env.bucket,
		"--s3-region", objstoretest.Region, "--s3-path-style=true", "--tiering-interval", "100ms",
		"--remote-orphan-grace", "1s", "--broker-session-timeout", sessionTTL.String(),
		"--retention-check-interval", "200ms")
	n.Start()
	n.WaitReady()
	createTopic(t, n.Kafka(), topic, 1, tieredTopicConfig)
	produceRange(t, n.Kafka(), topic, 0, before)
	waitFor(t, 60*time.Second, "the first records tiered and dropped locally", func() bool {
		return listOffset(t, n.Kafka(), topic, -4) > 0
	})
	partRecords := func() []controlplane.RemoteSegment {
		rl := readRemoteLog(t, n.nats, sessionTTL)
		var out []controlplane.RemoteSegment
		for _, id := range rl.RemoteTopicIDs() {
			for _, p := range rl.RemotePartitions(id) {
				out = append(out, rl.ListRemoteSegments(id, p)...)
			}
		}
		return out
	}
	records0 := len(partRecords())

	env.srv.Stop()
	outage := time.Now()
	tiered0 := listOffset(t, n.Kafka(), topic, -5) // LATEST_TIERED
	passes0 := metricValue(t, n.Admin(), "shale_tiering_passes_total")
	produceRange(t, n.Kafka(), topic, before, before+during)
	waitFor(t, 30*time.Second, "shale_tiering_bucket_unreachable 1", func() bool {
		return metricValue(t, n.Admin(), "shale_tiering_bucket_unreachable") == 1
	})
	// Many passes with the bucket down (each waits out its retries).
	waitFor(t, 120*time.Second, "10 tiering passes during the outage", func() bool {
		return metricValue(t, n.Admin(), "shale_tiering_passes_total") >= passes0+10
	})
	if recs := len(partRecords()); recs > records0+1 {
		t.Fatalf("%d remote segment records after %v of outage, %d before it: the metadata grows", recs,
			time.Since(outage).Round(time.Second), records0)
	}
	// Nothing that is not in the bucket is deleted locally, and the local
	// log is what could not be uploaded plus the hot tail.
	localStart := listOffset(t, n.Kafka(), topic, -4)
	if tiered := listOffset(t, n.Kafka(), topic, -5); tiered != tiered0 || localStart > tiered0+1 {
		t.Fatalf("during the outage: last tiered offset %d (was %d), local log start %d: a gap", tiered, tiered0, localStart)
	}
	if got := n.CountLines("bucket unreachable: uploads and remote deletes wait, local segments are kept"); got != 1 {
		t.Fatalf("%d 'bucket unreachable' log lines, want 1 for the outage", got)
	}
	size := logBytes(t, filepath.Join(dataDir, "logs", topic+"-0"))
	t.Logf("outage of %v: %d records produced, local log %d bytes from offset %d, %d records in the metadata (%d before)",
		time.Since(outage).Round(time.Millisecond), during, size, localStart, len(partRecords()), records0)

	env.srv.Restart(t)
	total := int64(before + during)
	waitFor(t, 120*time.Second, "uploads to resume and local retention to drop the outage's backlog", func() bool {
		return listOffset(t, n.Kafka(), topic, -4) > total/2 && metricValue(t, n.Admin(), "shale_tiering_bucket_unreachable") == 0
	})
	if got := n.CountLines("bucket reachable again"); got != 1 {
		t.Fatalf("%d 'bucket reachable again' log lines, want 1", got)
	}
	if after := logBytes(t, filepath.Join(dataDir, "logs", topic+"-0")); after >= size {
		t.Fatalf("local log %d bytes after the outage, %d during it: not shrinking back", after, size)
	}
	consumeFranz(t, n.Kafka(), topic, 0, total)
	var last string
	waitFor(t, 60*time.Second, "the bucket to match the metadata", func() bool {
		last = bucketMatchesRemoteLog(t, readRemoteLog(t, n.nats, sessionTTL), mc, env.bucket)
		return last == ""
	})
	n.CheckNoPanic()
}

// metricValue scrapes the node's /metrics for an unlabelled series.
func metricValue(t testing.TB, admin, name string) float64 {
	t.Helper()
	hc := http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", admin, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("metric %s: %q", name, v)
			}
			return f
		}
	}
	t.Fatalf("metric %s not served by %s", name, admin)
	return 0
}

// logBytes sums the .log files of a partition directory.
func logBytes(t testing.TB, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
	}
	return n
}
