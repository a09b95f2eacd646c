package restoretest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/internal/proctest"
)

const (
	forkSource  = "src"
	forkRecords = 400 // one record per batch
)

// TestForkTopicWithoutCopying: a tiered topic of one-record batches is
// forked at an offset and at a time (`shale topic fork`). Each fork reads
// back exactly the source's records below its cut (offsets, values,
// timestamps), the bucket gains no segment object for either fork, writes
// to a fork and to the source do not show in the other, and after the
// source's retention (remote.delete.grace.ms of 1 s), its deletion and the
// purge of its quarantine, the forks still read their whole history while
// the objects no fork lists are gone.
func TestForkTopicWithoutCopying(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", objstoretest.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", objstoretest.SecretKey)
	t.Setenv("AWS_REGION", objstoretest.Region)
	srv := objstoretest.StartS3Server(t)
	bucket := srv.CreateBucket(t)
	ctx := proctest.Context(t, 4*time.Minute)
	opts := []proctest.ClusterOption{
		proctest.NodeFlags("--s3-endpoint", srv.Endpoint, "--s3-bucket", bucket, "--s3-region", objstoretest.Region,
			"--s3-path-style=true", "--tiering-interval", "200ms"),
		proctest.NodeEnv("AWS_EC2_METADATA_DISABLED=true"),
	}
	c := proctest.StartCluster(t, shaleBin, []int32{1}, append(opts, proctest.ClusterName("old"))...)
	n1 := c.Node(1)
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"remote.storage.enable": kmsg.StringPtr("true"),
		"segment.bytes": kmsg.StringPtr("4096"), "remote.delete.grace.ms": kmsg.StringPtr("1000")}, forkSource)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", forkSource, err)
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := range forkRecords {
		r := &kgo.Record{Topic: forkSource, Value: fmt.Appendf(nil, "v%04d", i), Timestamp: base.Add(time.Duration(i) * time.Millisecond)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		if r.Offset != int64(i) {
			t.Fatalf("record %d at offset %d", i, r.Offset)
		}
	}
	source := readAll(t, ctx, c, forkSource, forkRecords)
	waitFor(t, 60*time.Second, "the source tiered past offset 320", func() bool { return lastTiered(ctx, cl, forkSource, 0) >= 320 })

	before := segmentObjects(t, srv.Dir, bucket)
	fork := func(name, at string) adminapi.ForkReport {
		t.Helper()
		out, err := exec.CommandContext(ctx, shaleBin, "topic", "fork", forkSource, name, "--at", at, "--admin", n1.Admin(),
			"--output", "json").CombinedOutput()
		if err != nil {
			t.Fatalf("shale topic fork %s --at %s: %v\n%s", name, at, err, out)
		}
		var rep adminapi.ForkReport
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("fork report: %v\n%s", err, out)
		}
		t.Logf("fork %s at %s: %+v", name, at, rep.Partitions)
		return rep
	}
	atOffset := fork("f-offset", "250")
	atTime := fork("f-time", "@"+strconv.FormatInt(base.Add(300*time.Millisecond).UnixMilli(), 10))
	// A cut past the uploaded end is refused, saying where a fork is
	// possible now; nothing is created.
	late, err := exec.CommandContext(ctx, shaleBin, "topic", "fork", forkSource, "f-late", "--at", "100000", "--admin", n1.Admin()).CombinedOutput()
	if err == nil || !strings.Contains(string(late), "a fork is possible now at --at") {
		t.Fatalf("a fork past the uploaded end: %v: %s", err, late)
	}
	if topics, err := adm.ListTopics(ctx); err != nil || topics.Has("f-late") {
		t.Fatalf("a refused fork created its topic: %v %v", topics.Names(), err)
	}
	t.Logf("refused: %s", strings.TrimSpace(string(late)))
	cuts := map[string]int64{"f-offset": 250, "f-time": 300}
	for _, rep := range []adminapi.ForkReport{atOffset, atTime} {
		if len(rep.Partitions) != 1 || rep.Partitions[0].Cut != cuts[rep.Topic] || rep.Partitions[0].LogStartOffset != 0 {
			t.Fatalf("fork %s: %+v, want the cut at %d", rep.Topic, rep.Partitions, cuts[rep.Topic])
		}
	}
	after := segmentObjects(t, srv.Dir, bucket)
	for _, rep := range []adminapi.ForkReport{atOffset, atTime} {
		if n := countUnder(after, rep.Topic+"-"+rep.TopicID); n != 0 {
			t.Errorf("the bucket holds %d objects of fork %s at its creation", n, rep.Topic)
		}
	}
	if len(after) != len(before) {
		t.Logf("segment objects %d before the forks, %d after (the source may upload meanwhile)", len(before), len(after))
	}
	t.Logf("bucket: %d segment objects before the forks, %d after; none under the forks' keys", len(before), len(after))

	checkFork := func(name string, cut int64) {
		t.Helper()
		if end := listOffset(ctx, cl, name, 0, -1); end != cut {
			t.Fatalf("%s: end offset %d, want %d", name, end, cut)
		}
		if start := listOffset(ctx, cl, name, 0, -2); start != 0 {
			t.Fatalf("%s: log start %d, want 0", name, start)
		}
		got := readAll(t, ctx, c, name, int(cut))
		for i, r := range got {
			s := source[i]
			if r.Offset != s.Offset || string(r.Value) != string(s.Value) || !r.Timestamp.Equal(s.Timestamp) {
				t.Fatalf("%s record %d: offset %d %q at %v, source offset %d %q at %v", name, i, r.Offset, r.Value,
					r.Timestamp, s.Offset, s.Value, s.Timestamp)
			}
		}
	}
	for _, name := range []string{"f-offset", "f-time"} {
		waitFor(t, 30*time.Second, name+" led", func() bool { return listOffset(ctx, cl, name, 0, -1) >= 0 })
	}
	checkFork("f-offset", 250)
	checkFork("f-time", 300)

	// Writes to a fork continue it at its cut and do not show in the
	// source, nor the source's in the fork.
	w := &kgo.Record{Topic: "f-offset", Value: []byte("fork-own")}
	if err := cl.ProduceSync(ctx, w).FirstErr(); err != nil || w.Offset != 250 {
		t.Fatalf("produce to the fork: offset %d, %v (want 250)", w.Offset, err)
	}
	sw := &kgo.Record{Topic: forkSource, Value: []byte("source-own")}
	if err := cl.ProduceSync(ctx, sw).FirstErr(); err != nil || sw.Offset != forkRecords {
		t.Fatalf("produce to the source: offset %d, %v", sw.Offset, err)
	}
	if got := readAll(t, ctx, c, forkSource, forkRecords+1); string(got[250].Value) != "v0250" || string(got[forkRecords].Value) != "source-own" {
		t.Fatalf("the source after the fork's write: 250=%q, %d=%q", got[250].Value, forkRecords, got[forkRecords].Value)
	}
	if end := listOffset(ctx, cl, "f-time", 0, -1); end != 300 {
		t.Fatalf("f-time after the source's write: end %d, want 300", end)
	}
	if got := readAll(t, ctx, c, "f-offset", 251); string(got[250].Value) != "fork-own" {
		t.Fatalf("the fork's own record: %q", got[250].Value)
	}

	// DeleteRecords' log start on the source holds for a fork made after.
	dres, err := adm.DeleteRecords(ctx, kadm.Offsets{forkSource: {0: {Topic: forkSource, Partition: 0, At: 15}}})
	if err == nil {
		err = dres.Error()
	}
	if err != nil {
		t.Fatalf("delete records below 15: %v", err)
	}
	fdr := fork("f-dr", "100")
	if fdr.Partitions[0].LogStartOffset != 15 || fdr.Partitions[0].Cut != 100 {
		t.Fatalf("fork after DeleteRecords: %+v, want log start 15, cut 100", fdr.Partitions)
	}
	var start int64
	waitFor(t, 30*time.Second, "f-dr's log start", func() bool {
		start = listOffset(ctx, cl, "f-dr", 0, -2)
		return start >= 0
	})
	if start != 15 {
		t.Fatalf("f-dr: log start %d, want 15", start)
	}
	if got := readFrom(t, ctx, c, "f-dr", 15, 1); string(got[0].Value) != "v0015" {
		t.Fatalf("f-dr at its log start: offset %d %q", got[0].Offset, got[0].Value)
	}

	// The source goes: its retention first (every closed remote segment,
	// quarantined for 1 s, then purged), then the topic, whose
	// quarantine entries are purged at once.
	ar, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1")}}, forkSource)
	if err == nil {
		err = ar[0].Err
	}
	if err != nil {
		t.Fatalf("retention.ms=1 on the source: %v", err)
	}
	srcKeys := forkSource + "-" + atOffset.SourceID
	waitFor(t, 60*time.Second, "the source's retention to delete objects no fork lists", func() bool {
		return countUnder(segmentObjects(t, srv.Dir, bucket), srcKeys) < countUnder(after, srcKeys)
	})
	checkFork("f-time", 300)
	dr, err := adm.DeleteTopics(ctx, forkSource)
	if err == nil {
		err = dr[forkSource].Err
	}
	if err != nil {
		t.Fatalf("delete the source: %v", err)
	}
	// Whatever of the source is still quarantined (retention quarantined
	// its segments for 1 s; the deletion quarantines what is left for the
	// broker-wide day) is purged now.
	waitFor(t, 60*time.Second, "no quarantine entry of the source", func() bool {
		out, err := exec.CommandContext(ctx, shaleBin, "tier", "quarantine", "list", "--topic", forkSource,
			"--admin", n1.Admin(), "--output", "json").CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"id"`) {
			return err == nil
		}
		out, err = exec.CommandContext(ctx, shaleBin, "tier", "quarantine", "purge", "--topic", forkSource,
			"--admin", n1.Admin()).CombinedOutput()
		t.Logf("purge: %v: %s", err, strings.TrimSpace(string(out)))
		return false
	})
	left := countUnder(segmentObjects(t, srv.Dir, bucket), srcKeys)
	t.Logf("source objects: %d at the forks, %d after its retention, deletion and purge (kept: listed by a fork)",
		countUnder(after, srcKeys), left)
	if left == 0 {
		t.Fatal("every source object went: the forks' references were not counted")
	}
	checkFork("f-time", 300)
	if got := readAll(t, ctx, c, "f-offset", 251); string(got[250].Value) != "fork-own" || string(got[249].Value) != "v0249" {
		t.Fatalf("f-offset after the source went: 249=%q 250=%q", got[249].Value, got[250].Value)
	}

	// The references survive a restore: the cluster is destroyed and a
	// new one restores the forks from the bucket alone (the fork
	// descriptors under _shale/forks/ list the source's objects again).
	waitFor(t, 30*time.Second, "the forks' topic descriptors", func() bool {
		n := 0
		for _, f := range []adminapi.ForkReport{atOffset, atTime} {
			n += countUnder(metaObjects(t, srv.Dir, bucket), "topics/"+f.Topic+"-"+f.TopicID)
		}
		return n >= 2
	})
	c.Destroy()
	fresh := proctest.StartCluster(t, shaleBin, []int32{1}, append(opts, proctest.ClusterName("new"))...)
	out, err := exec.CommandContext(ctx, shaleBin, "topic", "restore", "f-offset", "f-time", "--admin", fresh.Node(1).Admin(),
		"--bootstrap", fresh.Node(1).Kafka(), "--output", "json").CombinedOutput()
	if err != nil {
		t.Fatalf("restore the forks: %v\n%s", err, out)
	}
	var rep adminapi.RestoreReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("restore report: %v\n%s", err, out)
	}
	for _, tp := range rep.Topics {
		t.Logf("restored %s: %s %+v, missing %q", tp.Topic, tp.Status, tp.Partition, tp.Missing)
		if tp.Status != "restored" {
			t.Fatalf("%s: %s: %s", tp.Topic, tp.Status, tp.Error)
		}
	}
	source = source[:300]
	c = fresh
	ncl := fresh.Client()
	cl = ncl
	for _, name := range []string{"f-offset", "f-time"} {
		waitFor(t, 30*time.Second, name+" led after the restore", func() bool { return listOffset(ctx, cl, name, 0, -1) >= 0 })
	}
	checkFork("f-time", 300)
	if got := readAll(t, ctx, c, "f-offset", 250); string(got[249].Value) != "v0249" {
		t.Fatalf("f-offset after the restore: 249=%q", got[249].Value)
	}
}

// metaObjects lists the bucket's _shale/ keys.
func metaObjects(t *testing.T, dir, bucket string) []string {
	t.Helper()
	var keys []string
	root := filepath.Join(dir, bucket)
	err := filepath.WalkDir(filepath.Join(root, "_shale"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			keys = append(keys, "/"+filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("listing the bucket: %v", err)
	}
	return keys
}

// readFrom reads n records of partition 0 of topic from offset from.
func readFrom(t *testing.T, ctx context.Context, c *proctest.Cluster, topic string, from int64, n int) []*kgo.Record {
	t.Helper()
	rc := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}))
	defer rc.Close()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := rc.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s: read %d of %d records from %d: %v", topic, len(out), n, from, err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// readAll reads offsets [0, n) of partition 0 of topic.
func readAll(t *testing.T, ctx context.Context, c *proctest.Cluster, topic string, n int) []*kgo.Record {
	t.Helper()
	rc := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
	defer rc.Close()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := rc.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s: read %d of %d records: %v", topic, len(out), n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("%s: fetch: %v", topic, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if len(out) < n {
				out = append(out, r)
			}
		})
	}
	for i, r := range out {
		if r.Offset != int64(i) {
			t.Fatalf("%s: record %d at offset %d", topic, i, r.Offset)
		}
	}
	return out
}

// segmentObjects lists the bucket's segment object keys (not _shale/),
// from the S3 server's posix directory.
func segmentObjects(t *testing.T, dir, bucket string) []string {
	t.Helper()
	root := filepath.Join(dir, bucket)
	var keys []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(rel, "_shale") {
			keys = append(keys, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("listing the bucket: %v", err)
	}
	return keys
}

func countUnder(keys []string, dir string) int {
	n := 0
	for _, k := range keys {
		if strings.Contains(k, "/"+dir+"/") {
			n++
		}
	}
	return n
}
