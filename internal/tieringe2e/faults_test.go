package tieringe2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestFaultsS3 runs uploads and cold reads through injected S3 faults —
// 500 InternalError, 503 SlowDown, a stalled request and a slow server —
// and then checks that every record reads back and that the bucket,
// listed through minio-go, holds exactly what the metadata references.
func TestFaultsS3(t *testing.T) {
	env := startS3(t)
	faults := objstoretest.StartFaultProxy(t, env.srv.Endpoint)
	n := startNode(t, t.TempDir(), faults.URL, env.bucket, testnode.WithOrphanGrace(time.Second))
	const topic, total = "faults", 20_000
	createTopic(t, n.KafkaAddr(), topic, 1, tieredTopicConfig)

	// Uploads: a slow server, and faults among the first requests, the
	// stall among them (it holds one request for objstoretest.SlowLimit,
	// since the node sets no per-attempt timeout, then answers 503).
	faults.SetDelay(20 * time.Millisecond)
	faults.SetPlan(objstoretest.Pass, objstoretest.InternalError, objstoretest.SlowDown, objstoretest.Pass,
		objstoretest.InternalError, objstoretest.InternalError, objstoretest.Stall, objstoretest.SlowDown,
		objstoretest.Pass, objstoretest.InternalError)
	produceRange(t, n.KafkaAddr(), topic, 0, total)
	waitTiered(t, n, topic, 5, total/2)
	inj := faults.Injected()
	if inj[objstoretest.InternalError] != 4 || inj[objstoretest.SlowDown] != 2 || inj[objstoretest.Stall] != 1 {
		t.Fatalf("upload faults injected: %v, want the whole plan", inj)
	}

	// Cold reads: six 500s in a row outlast the bucket's five attempts, so
	// a fetch fails and the client must retry; then a 503 and a slow server.
	plan := make([]objstoretest.Fault, 0, 8)
	for range 6 {
		plan = append(plan, objstoretest.InternalError)
	}
	plan = append(plan, objstoretest.Pass, objstoretest.SlowDown)
	faults.SetPlan(plan...)
	faults.SetDelay(10 * time.Millisecond)
	consumeFranz(t, n.KafkaAddr(), topic, 0, total)
	if inj := faults.Injected(); inj[objstoretest.InternalError] != 10 || inj[objstoretest.SlowDown] != 3 {
		t.Fatalf("faults injected: %v, want both plans", inj)
	}
	faults.SetDelay(0)

	mc := minioClient(t, env.srv.Endpoint)
	waitBucketMatches(t, 30*time.Second, n, mc, env.bucket)
	if st := n.Tiering().Stats(); st.SegmentsUploaded == 0 {
		t.Fatalf("tiering stats %+v: nothing uploaded", st)
	}
}

// TestUploadCutOffLeavesNoOrphanS3 stops a node while a segment's upload
// is half done (its .log and .index are in the bucket, its .timeindex PUT
// is held by the proxy), so a CopyStarted record and the objects it lists
// are left behind; a node restarted on the same data dir and bucket must
// clean them up in its reconciler without waiting out the orphan grace
// (the record is of the previous leader epoch) and still serve every record.
func TestUploadCutOffLeavesNoOrphanS3(t *testing.T) {
	env := startS3(t)
	proxy := objstoretest.StartFaultProxy(t, env.srv.Endpoint)
	dir := t.TempDir()
	const topic, total = "cutoff", 10_000
	proxy.HoldPuts(".timeindex")
	n := startNode(t, dir, proxy.URL, env.bucket, testnode.WithOrphanGrace(time.Second))
	createTopic(t, n.KafkaAddr(), topic, 1, tieredTopicConfig)
	produceRange(t, n.KafkaAddr(), topic, 0, total)
	select {
	case <-proxy.Held():
	case <-ctxT(t, 60*time.Second).Done():
		t.Fatal("no .timeindex upload reached the proxy")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if err := n.Close(ctx); err != nil {
		t.Logf("close: %v", err)
	}
	cancel()

	mc := minioClient(t, env.srv.Endpoint)
	if !halfUploaded(listBucket(t, mc, env.bucket)) {
		t.Fatal("the bucket holds no half-uploaded segment (a .log without its .timeindex): the test did not cut an upload off")
	}
	proxy.HoldPuts("")
	// The default orphan grace (5 minutes): the cut-off upload's record is
	// of an older leader epoch, fenced from ever finishing, so the new
	// leader removes it and the objects it lists at once; only objects no
	// record lists wait out the grace.
	n = startNode(t, dir, proxy.URL, env.bucket)
	waitTiered(t, n, topic, 3, total/2)
	waitBucketMatches(t, 30*time.Second, n, mc, env.bucket)
	if st := n.Tiering().Stats(); st.OrphansDeleted == 0 {
		t.Fatalf("tiering stats %+v: the reconciler deleted nothing", st)
	}
	consumeFranz(t, n.KafkaAddr(), topic, 0, total)
}

// halfUploaded reports whether keys hold a segment's .log without its
// .timeindex.
func halfUploaded(keys []string) bool {
	have := map[string]bool{}
	for _, k := range keys {
		have[k] = true
	}
	for _, k := range keys {
		if base, ok := strings.CutSuffix(k, ".log"); ok && !have[base+".timeindex"] {
			return true
		}
	}
	return false
}
