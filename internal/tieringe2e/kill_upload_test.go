package tieringe2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/internal/proctest"
)

// killPoint is one place in a segment's upload (CopyStarted record, then
// .log, .index, .timeindex, .epochs, .snapshot, manifest.json, then
// CopyFinished) where TestKillMidUploadS3 SIGKILLs the node: the kill proxy
// catches the first PUT of a key ending in suffix, in mode. With
// killCleanup, the restarted node is killed again while its reconciler
// deletes the cut-off upload (the DELETE of its manifest.json, the last of
// its objects, held), leaving a DeleteStarted record to resume.
type killPoint struct {
	what        string
	suffix      string
	mode        objstoretest.Catch
	killCleanup bool
}

var killPoints = []killPoint{
	{"during the .log PUT", ".log", objstoretest.CatchBefore, false},
	{"after the .log landed, before the other objects", ".log", objstoretest.CatchAfter, false},
	{"during the .timeindex PUT, .log and .index landed", ".timeindex", objstoretest.CatchBefore, false},
	{"after manifest.json landed, before CopyFinished", ".manifest.json", objstoretest.CatchAfter, true},
	{"during a .log PUT that lands only after the restart reconciled its record away", ".log", objstoretest.CatchLate, false},
}

// TestKillMidUploadS3 SIGKILLs a `shale serve` child process in the middle
// of a segment upload to versitygw, once at each killPoint, restarting it on
// the same data dir each time, while one idempotent acks=all franz-go
// producer keeps writing through the kills. Afterwards every record is
// acknowledged at its own offset and reads back from offset 0, through the
// cold tier, exactly once, in order and byte-identical; and the bucket,
// listed through minio-go, holds exactly the objects of the CopyFinished
// remote segment records read from the node's control plane: the killed
// uploads' objects, and a PUT that landed after its node died and after its
// record was reconciled away, are all removed by the reconciler.
func TestKillMidUploadS3(t *testing.T) {
	const (
		topic      = "killupload"
		perRound   = 3000 // records produced per kill, ~4 segments of 64 KiB
		sessionTTL = 2 * time.Second
	)
	env := startS3(t)
	proxy := objstoretest.StartFaultProxy(t, env.srv.Endpoint)
	mc := minioClient(t, env.srv.Endpoint)
	n := newChildNode(t, t.TempDir(), "--s3-endpoint", proxy.URL, "--s3-bucket", env.bucket,
		"--s3-region", objstoretest.Region, "--s3-path-style=true", "--tiering-interval", "100ms",
		"--remote-orphan-grace", "1s", "--broker-session-timeout", sessionTTL.String(),
		"--retention-check-interval", "200ms")
	n.Start()
	n.WaitReady()
	begin := time.Now()
	// The reconciler's sweep deletes at once here (no quarantine): the
	// test is about what the sweep finds.
	cfg := maps.Clone(tieredTopicConfig)
	cfg["remote.delete.grace.ms"] = new("0")
	createTopic(t, n.Kafka(), topic, 1, cfg)

	// One producer across every kill: its unacknowledged batches are retried
	// against the restarted node, which must not write them twice.
	cl := newClient(t, n.Kafka(), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(2*time.Millisecond), kgo.ProducerBatchMaxBytes(16<<10),
		kgo.MaxBufferedRecords(len(killPoints)*perRound), kgo.RecordDeliveryTimeout(10*time.Minute))
	acks := &ackTracker{}
	ctx := ctxT(t, 2*time.Minute)
	total := 0
	var lateKey string
	for i, kp := range killPoints {
		proxy.Catch(http.MethodPut, kp.suffix, kp.mode)
		for range perRound {
			cl.Produce(ctx, recordAt(topic, total), acks.promise(total))
			total++
		}
		key := waitCaught(t, proxy, env.bucket, fmt.Sprintf("kill %d (%s)", i+1, kp.what))
		n.Kill()
		checkCutOff(t, listBucket(t, mc, env.bucket), key, kp)
		if kp.killCleanup {
			proxy.Catch(http.MethodDelete, key, objstoretest.CatchBefore)
		}
		n.Start()
		took := n.WaitReady()
		t.Logf("kill %d %s: caught %s; %d of %d records acked; restarted in %v",
			i+1, kp.what, key, acks.count(), total, took.Round(time.Millisecond))
		if kp.killCleanup {
			waitCaught(t, proxy, env.bucket, fmt.Sprintf("kill %d (the clean-up of %s)", i+1, key))
			n.Kill()
			keys := listBucket(t, mc, env.bucket)
			base, _ := strings.CutSuffix(key, ".manifest.json")
			if !slices.Contains(keys, key) || slices.Contains(keys, base+".log") {
				t.Fatalf("kill %d during the clean-up: the bucket should hold %s but not its .log: %v", i+1, key, keys)
			}
			n.Start()
			took := n.WaitReady()
			t.Logf("kill %d again during the reconciler's DELETE of %s; restarted in %v", i+1, key, took.Round(time.Millisecond))
		}
		if kp.mode == objstoretest.CatchLate {
			landLate(t, n, proxy, mc, env.bucket, key, sessionTTL)
			lateKey = key
		}
		// The restarted node uploads the segment whose upload was killed
		// (the next kill then cuts off a later one).
		base := segmentBase(t, key)
		waitFor(t, 30*time.Second, fmt.Sprintf("the segment at %d to be tiered after kill %d", base, i+1), func() bool {
			return listOffset(t, n.Kafka(), topic, -5) >= base
		})
	}

	fctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.Flush(fctx); err != nil {
		t.Fatalf("flush: %v (%d of %d acked)", err, acks.count(), total)
	}
	if err := acks.err(); err != nil {
		t.Fatal(err)
	}
	if got := acks.count(); got != total {
		t.Fatalf("%d of %d records acknowledged", got, total)
	}
	if hw := listOffset(t, n.Kafka(), topic, -1); hw != int64(total) {
		t.Fatalf("high watermark %d, want %d: a record was written twice", hw, total)
	}
	t.Logf("all %d records acknowledged at %v", total, time.Since(begin).Round(time.Millisecond))

	// Uploads and reconciliation settle: most of the log only in the bucket,
	// and the bucket exactly what the committed metadata references.
	waitFor(t, 60*time.Second, "local log start past half the log", func() bool {
		return listOffset(t, n.Kafka(), topic, -4) >= int64(total/2)
	})
	var last string
	if err := proctest.Poll(60*time.Second, 200*time.Millisecond, func() bool {
		last = bucketMatchesRemoteLog(t, readRemoteLog(t, n.nats, sessionTTL), mc, env.bucket)
		return last == ""
	}); err != nil {
		t.Fatalf("the bucket does not match the remote metadata after 60s: %s\nbucket: %v", last, listBucket(t, mc, env.bucket))
	}
	// The reconciler logs the deletion after the DELETE answered, and the
	// node's output reaches the test through a pipe: the bucket can match
	// before the line is read.
	if err := proctest.Poll(10*time.Second, 100*time.Millisecond, func() bool { return sweptBy(n, lateKey) }); err != nil {
		t.Fatalf("no reconciler log line deleting %s, the object that landed late", lateKey)
	}
	t.Logf("bucket matches the metadata at %v", time.Since(begin).Round(time.Millisecond))

	if got := listOffset(t, n.Kafka(), topic, -2); got != 0 {
		t.Fatalf("earliest offset %d, want 0 (the log start is in the bucket)", got)
	}
	consumeFranz(t, n.Kafka(), topic, 0, int64(total))
	n.CheckNoPanic()
	t.Logf("replayed %d records from offset 0 at %v", total, time.Since(begin).Round(time.Millisecond))
}

// waitCaught returns the key in bucket of the request the proxy caught,
// failing the test after 30s.
func waitCaught(t *testing.T, proxy *objstoretest.FaultProxy, bucket, what string) string {
	t.Helper()
	tm := time.NewTimer(30 * time.Second)
	defer tm.Stop()
	select {
	case path := <-proxy.Held():
		return strings.TrimPrefix(path, "/"+bucket+"/")
	case <-tm.C:
		t.Fatalf("%s: no request reached the proxy in 30s", what)
		return ""
	}
}

// checkCutOff checks that the bucket, listed right after the kill, shows the
// upload cut off at kp: the caught key is stored only when the PUT went
// through (objstoretest.CatchAfter), and the objects PUT before it are there.
func checkCutOff(t *testing.T, keys []string, key string, kp killPoint) {
	t.Helper()
	has := func(k string) bool { _, ok := slices.BinarySearch(keys, k); return ok }
	if want := kp.mode == objstoretest.CatchAfter; has(key) != want {
		t.Fatalf("kill %s: %s in the bucket = %v, want %v", kp.what, key, has(key), want)
	}
	if base, ok := strings.CutSuffix(key, ".timeindex"); ok {
		for _, k := range []string{base + ".log", base + ".index"} {
			if !has(k) {
				t.Fatalf("kill %s: %s, uploaded before the held PUT, is not in the bucket", kp.what, k)
			}
		}
	}
}

// landLate waits until the restarted node has no record referencing key
// (its reconciler retired the killed upload's CopyStarted record), then
// lets the caught PUT of key reach the S3 server, leaving an object that
// no record references: only the reconciler's bucket sweep can remove it.
func landLate(t *testing.T, n *childNode, proxy *objstoretest.FaultProxy, mc *minio.Client, bucket, key string, sessionTTL time.Duration) {
	t.Helper()
	waitFor(t, 30*time.Second, "the reconciler to retire the record of "+key, func() bool {
		rl := readRemoteLog(t, n.nats, sessionTTL)
		for _, id := range rl.RemoteTopicIDs() {
			for _, p := range rl.RemotePartitions(id) {
				for _, s := range rl.ListRemoteSegments(id, p) {
					if slices.Contains(s.Objects, key) {
						return false
					}
				}
			}
		}
		return true
	})
	if err := proxy.ReleaseLate(ctxT(t, 30*time.Second)); err != nil {
		t.Fatalf("landing the late PUT: %v", err)
	}
	if !slices.Contains(listBucket(t, mc, bucket), key) {
		t.Fatalf("the late PUT of %s answered 2xx but the object is not in the bucket", key)
	}
}

// segmentBase returns the base offset named by a segment object's key.
func segmentBase(t *testing.T, key string) int64 {
	t.Helper()
	name := key[strings.LastIndexByte(key, '/')+1:]
	var base int64
	if _, err := fmt.Sscanf(name, "%020d-", &base); err != nil {
		t.Fatalf("key %s names no base offset: %v", key, err)
	}
	return base
}

// sweptBy reports whether the node logged deleting key as unreferenced.
func sweptBy(n *childNode, key string) bool {
	for _, kv := range n.LogLines("reconciler: deleted unreferenced object") {
		if kv["key"] == key {
			return true
		}
	}
	return false
}

// ackTracker collects the producer's promises: record i must land at
// offset i. Promises run on the client's goroutines.
type ackTracker struct {
	mu     sync.Mutex
	acked  int
	failed int
	first  error
}

func (a *ackTracker) promise(i int) func(*kgo.Record, error) {
	return func(r *kgo.Record, err error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if err == nil && r.Offset != int64(i) {
			err = fmt.Errorf("record %d landed at offset %d", i, r.Offset)
		}
		if err != nil {
			a.failed++
			if a.first == nil {
				a.first = fmt.Errorf("record %d: %w", i, err)
			}
			return
		}
		a.acked++
	}
}

func (a *ackTracker) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.acked
}

// err describes the failed promises, or is nil.
func (a *ackTracker) err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failed == 0 {
		return nil
	}
	return fmt.Errorf("%d records failed or landed at another offset; first: %w", a.failed, a.first)
}
