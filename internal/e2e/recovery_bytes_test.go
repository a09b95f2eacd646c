package e2e

import (
	"crypto/rand"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
)

// TestUncleanRestartReadsWhatTheLogsHold kills a node holding 200
// partitions with SIGKILL and restarts it, then checks from the node's own
// counter (shale_log_recovery_bytes_total) that recovering them read about
// what the logs hold, not their preallocated indexes: before issue 23 the
// restart touched every page of each active segment's .index and
// .timeindex, 200 x 2 x segment.index.bytes. It asserts bytes, not time.
func TestUncleanRestartReadsWhatTheLogsHold(t *testing.T) {
	t.Parallel()
	const (
		topic      = "many"
		parts      = 200
		perPart    = 8       // one batch each
		indexBytes = 1 << 20 // segment.index.bytes: 2 MiB preallocated per partition
	)
	n := newNode(t, t.TempDir())
	n.Start()
	n.WaitReady()
	cl := newClient(t, n.Kafka(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	ctx := proctest.Context(t, 60*time.Second)
	ib := strconv.Itoa(indexBytes)
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, parts, 1, map[string]*string{"segment.index.bytes": &ib}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic: %v", err)
	}
	value := make([]byte, 512)
	rand.Read(value) // incompressible: the logs hold what is produced
	for i := range perPart {
		var recs []*kgo.Record
		for p := range int32(parts) {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: value, Key: []byte(fmt.Sprint(i))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce round %d: %v", i, err)
		}
	}
	n.Kill()

	logBytes, logs := segmentLogs(t, n.DataDir())
	if logs < parts {
		t.Fatalf("%d segment logs in the data dir, want at least %d", logs, parts)
	}
	n.Start()
	n.WaitReady()
	// Reconcile opens the partitions after /readyz; each one's active
	// segment is re-read once (an unclean stop), so wait for that count.
	var segs, read float64
	if err := proctest.WaitFor(60*time.Second, func() bool {
		m := n.Metrics()
		segs, read = m["shale_log_recovery_segments_total"], m["shale_log_recovery_bytes_total"]
		return segs >= parts
	}); err != nil {
		t.Fatalf("recovered %v segments, want %d: %v\n%s", segs, parts, err, n.Tail())
	}
	rss := n.RSSFile() >> 10
	t.Logf("logs hold %d bytes in %d segments; recovery re-read %v segments and read %v bytes; RssFile %d kB",
		logBytes, logs, segs, read, rss)
	// Every byte of the logs is re-read once, plus each batch's header
	// read on its own before it; the indexes cost nothing.
	if read < float64(logBytes) || read > 2*float64(logBytes)+64<<10 {
		t.Fatalf("recovery read %v bytes; the logs hold %d, their indexes are preallocated to %d bytes (%d x 2 x %d)",
			read, logBytes, int64(logs)*2*indexBytes, logs, indexBytes)
	}
	n.CheckNoPanic()
}

var segmentLogName = regexp.MustCompile(`^[0-9]{20}\.log$`)

// segmentLogs sums the sizes of the segment .log files under dir.
func segmentLogs(t *testing.T, dir string) (bytes int64, files int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !segmentLogName.MatchString(d.Name()) {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		bytes += st.Size()
		files++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bytes, files
}
