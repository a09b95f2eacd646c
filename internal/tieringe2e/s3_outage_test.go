package tieringe2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/tiering"
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
//
// The disk: the node runs with disk_high_watermark 0.5 of a simulated disk
// of diskCapacity bytes holding only its data dir (tiering.DiskCapacityEnv;
// a real disk is shared with other programs). Writing on through the
// outage, produce must be refused with KAFKA_STORAGE_ERROR (retriable)
// before the data dir fills the disk, and accepted again once the backlog
// is uploaded.
func TestS3OutageS3(t *testing.T) {
	const (
		topic        = "outage"
		sessionTTL   = 3 * time.Second
		before       = 10_000 // records tiered before the outage
		during       = 12_000 // records produced while the bucket is down
		diskCapacity = 192 << 20
	)
	env := startS3(t)
	mc := minioClient(t, env.srv.Endpoint)
	dataDir := t.TempDir()
	n := &childNode{nats: proctest.FreeAddr(t)}
	n.Node = proctest.Serve(t, proctest.Binary(t), dataDir, []string{"--nats-listen", n.nats,
		"--s3-endpoint", env.srv.Endpoint, "--s3-bucket", env.bucket,
		"--s3-region", objstoretest.Region, "--s3-path-style=true", "--tiering-interval", "100ms",
		"--remote-orphan-grace", "1s", "--broker-session-timeout", sessionTTL.String(),
		"--retention-check-interval", "200ms", "--disk-high-watermark", "0.5"},
		proctest.Name("tieringe2e"), proctest.Env("AWS_EC2_METADATA_DISABLED=true",
			fmt.Sprintf("%s=%d", tiering.DiskCapacityEnv, diskCapacity)))
	n.Start()
	n.WaitReady()
	createTopic(t, n.Kafka(), topic, 1, tieredTopicConfig)
	// The disk phase writes big records to a topic of 8 MiB segments: few
	// uploads once the bucket is back. Segments that local retention
	// deletes stay on disk for file.delete.delay.ms (Kafka's 60 s by
	// default), and the disk counts them: at 1 s, produce is accepted again
	// about 1 s after the backlog is uploaded, not a minute.
	diskTopic := topic + "-disk"
	createTopic(t, n.Kafka(), diskTopic, 1, map[string]*string{"segment.bytes": new("8388608"),
		"local.retention.bytes": new("131072"), "remote.storage.enable": new("true"), "file.delete.delay.ms": new("1000")})
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
	// KIP-1023's EARLIEST_PENDING_UPLOAD (ListOffsets v11): what waits for
	// the bucket starts right after the last tiered offset, on local disk.
	if pending := listOffset(t, n.Kafka(), topic, -6); pending != tiered0+1 || pending < localStart {
		t.Fatalf("during the outage: earliest pending upload %d, want %d (last tiered %d + 1, local log start %d)",
			pending, tiered0+1, tiered0, localStart)
	}
	if got := n.CountLines("bucket unreachable: uploads and remote deletes wait, local segments are kept"); got != 1 {
		t.Fatalf("%d 'bucket unreachable' log lines, want 1 for the outage", got)
	}
	size := logBytes(t, filepath.Join(dataDir, "logs", topic+"-0"))
	t.Logf("outage of %v: %d records produced, local log %d bytes from offset %d, %d records in the metadata (%d before)",
		time.Since(outage).Round(time.Millisecond), during, size, localStart, len(partRecords()), records0)

	// Writing on, the data dir must not fill the disk: produce is refused
	// first, with a retriable KAFKA_STORAGE_ERROR.
	used0, err := tiering.DirDiskBytes(dataDir)
	if err != nil || used0 > diskCapacity/2-24<<20 {
		t.Fatalf("the data dir holds %d bytes before the disk phase (%v): the simulated disk of %d is too small for the test", used0, err, diskCapacity)
	}
	total := int64(before + during)
	big := produceUntilRefused(t, n.Kafka(), diskTopic, dataDir, diskCapacity)
	if !big.refused {
		t.Fatalf("produce never refused: the data dir reached %d bytes of a %d-byte disk (%d big records accepted)", big.used, diskCapacity, big.accepted)
	}
	t.Logf("produce refused (KAFKA_STORAGE_ERROR) with the data dir at %d of %d bytes, after %d records of %d bytes (the data dir held %d)",
		big.used, diskCapacity, big.accepted, bigValue, used0)

	env.srv.Restart(t)
	back := time.Now()
	waitFor(t, 120*time.Second, "uploads to resume and local retention to drop the outage's backlog", func() bool {
		return listOffset(t, n.Kafka(), topic, -4) > total/2 && metricValue(t, n.Admin(), "shale_tiering_bucket_unreachable") == 0
	})
	t.Logf("the backlog uploaded and dropped locally %v after the bucket came back", time.Since(back).Round(time.Millisecond))
	cl := bigClient(t, n.Kafka())
	waitFor(t, 120*time.Second, "produce accepted again", func() bool {
		return produceBig(t, cl, diskTopic) == nil
	})
	t.Logf("produce accepted again %v after the bucket came back", time.Since(back).Round(time.Millisecond))
	cl.Close()
	if got := n.CountLines("bucket reachable again"); got != 1 {
		t.Fatalf("%d 'bucket reachable again' log lines, want 1", got)
	}
	if after := logBytes(t, filepath.Join(dataDir, "logs", topic+"-0")); after >= size {
		t.Fatalf("local log %d bytes after the outage, %d during it: not shrinking back", after, size)
	}
	consumeFranz(t, n.Kafka(), topic, 0, total)
	t.Logf("every record read back %v after the bucket came back", time.Since(back).Round(time.Millisecond))
	if end := listOffset(t, n.Kafka(), diskTopic, -1); end != int64(big.accepted)+1 {
		t.Fatalf("%s ends at %d, want the %d big records accepted", diskTopic, end, big.accepted+1)
	}
	var last string
	waitFor(t, 60*time.Second, "the bucket to match the metadata", func() bool {
		last = bucketMatchesRemoteLog(t, readRemoteLog(t, n.nats, sessionTTL), mc, env.bucket)
		return last == ""
	})
	n.CheckNoPanic()
}

// bigValue is the value size of the records produceUntilRefused writes.
const bigValue = 512 << 10

// diskPhase is what produceUntilRefused saw.
type diskPhase struct {
	refused  bool  // a produce got KAFKA_STORAGE_ERROR
	used     int64 // the data dir's disk bytes then (or when it stopped)
	accepted int   // records written before
}

// produceUntilRefused writes records of bigValue bytes to partition 0 of
// topic, one acks=1 Produce request each, until one is refused with
// KAFKA_STORAGE_ERROR or the data dir takes capacity bytes of disk (the
// disk is full), at most 2*capacity/bigValue requests.
func produceUntilRefused(t testing.TB, addr, topic, dataDir string, capacity int64) diskPhase {
	t.Helper()
	cl := bigClient(t, addr)
	defer cl.Close()
	var out diskPhase
	for range 2 * capacity / bigValue {
		used, err := tiering.DirDiskBytes(dataDir)
		if err != nil {
			t.Fatal(err)
		}
		out.used = used
		if used >= capacity {
			return out
		}
		err = produceBig(t, cl, topic)
		switch {
		case errors.Is(err, kerr.KafkaStorageError):
			out.refused = true
			return out
		case err != nil:
			t.Fatalf("produce of big record %d: %v, want success or KAFKA_STORAGE_ERROR", out.accepted, err)
		}
		out.accepted++
	}
	return out
}

// bigClient is a client for produceBig: acks=1, no retries.
func bigClient(t testing.TB, addr string) *kgo.Client {
	return newClient(t, addr, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.RequestRetries(0))
}

// produceBig sends one record of bigValue bytes with a raw acks=1 Produce
// request (a client would retry KAFKA_STORAGE_ERROR) and returns the
// partition's error.
func produceBig(t testing.TB, cl *kgo.Client, topic string) error {
	t.Helper()
	opts := batch.NoProducer()
	opts.FirstTimestamp = time.Now().UnixMilli()
	records, err := batch.Build(nil, opts, []batch.Record{{Key: []byte("big"), Value: bytes.Repeat([]byte{'x'}, bigValue)}})
	if err != nil {
		t.Fatal(err)
	}
	id, err := proctest.TopicID(ctxT(t, 20*time.Second), cl, topic)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.Request(ctxT(t, 20*time.Second), req)
	if err != nil {
		t.Fatalf("produce request: %v", err)
	}
	r := resp.(*kmsg.ProduceResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("malformed produce response %+v", r)
	}
	return kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode)
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
