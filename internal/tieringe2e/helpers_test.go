package tieringe2e

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// baseTime is the timestamp of record 0; record i is stamped baseTime+i ms,
// so the first offset at or after baseTime+i ms is i. It is the test
// binary's start: older stamps would fall to retention.ms, and franz-go
// measures its delivery timeout from a record's timestamp.
var baseTime = time.Now().Truncate(time.Millisecond)

// tieredTopicConfig makes small segments, keeps little on local disk and
// tiers everything else.
var tieredTopicConfig = map[string]*string{
	"segment.bytes":         new("65536"),
	"local.retention.bytes": new("131072"),
	"remote.storage.enable": new("true"),
}

// s3Env is one versitygw server and bucket; its credentials are put in
// the environment so that the node's standard AWS chain finds them.
type s3Env struct {
	srv    *objstoretest.S3Server
	bucket string
}

// startS3 starts versitygw with a fresh bucket. It calls t.Setenv, so the
// test must not be parallel.
func startS3(t testing.TB) s3Env {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", objstoretest.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", objstoretest.SecretKey)
	t.Setenv("AWS_REGION", objstoretest.Region)
	srv := objstoretest.StartS3Server(t)
	return s3Env{srv: srv, bucket: srv.CreateBucket(t)}
}

// startNode starts a node on dir whose cold tier is bucket at endpoint,
// with a fast tiering loop.
func startNode(t testing.TB, dir, endpoint, bucket string, opts ...testnode.Option) *broker.Node {
	t.Helper()
	all := append([]testnode.Option{testnode.WithS3(endpoint, bucket), testnode.WithTiering(100 * time.Millisecond)}, opts...)
	return testnode.Start(t, dir, all...)
}

// ctxT is proctest.Context, by the name this package's tests use.
func ctxT(t testing.TB, d time.Duration) context.Context { return proctest.Context(t, d) }

func newClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t testing.TB, addr, topic string, partitions int32, cfg map[string]*string) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, addr))
	resp, err := adm.CreateTopic(ctxT(t, 30*time.Second), partitions, 1, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// recordAt is the record the tests write at offset i: a key naming i, a
// value of 16..79 pseudo-random bytes derived from i, one header, and the
// timestamp baseTime+i ms.
func recordAt(topic string, i int) *kgo.Record {
	key := fmt.Appendf(nil, "k%07d", i)
	n := 16 + i%64
	val := make([]byte, 0, n+4)
	seed := crc32.ChecksumIEEE(key)
	for len(val) < n {
		seed = seed*1664525 + 1013904223
		val = append(val, byte(seed>>24))
	}
	return &kgo.Record{Topic: topic, Key: key, Value: val, Timestamp: baseTime.Add(time.Duration(i) * time.Millisecond),
		Headers: []kgo.RecordHeader{{Key: "i", Value: fmt.Appendf(nil, "%d", i)}}}
}

// produceRange writes records [from, to) to partition 0 of topic, in
// order, with an idempotent producer, and checks each landed at its index.
// The delivery timeout bounds a stuck produce (an idempotent ProduceSync
// ignores ctx once buffered); franz-go counts it from a record's
// timestamp, baseTime, hence the margin over the package's run time.
func produceRange(t testing.TB, addr, topic string, from, to int) {
	t.Helper()
	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.ProducerBatchMaxBytes(16<<10), kgo.RecordDeliveryTimeout(10*time.Minute))
	defer cl.Close()
	ctx := ctxT(t, 90*time.Second)
	const chunk = 5000
	for lo := from; lo < to; lo += chunk {
		hi := min(lo+chunk, to)
		recs := make([]*kgo.Record, 0, hi-lo)
		for i := lo; i < hi; i++ {
			recs = append(recs, recordAt(topic, i))
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce [%d,%d): %v", lo, hi, err)
		}
		for j, r := range recs {
			if r.Offset != int64(lo+j) {
				t.Fatalf("record %d landed at offset %d", lo+j, r.Offset)
			}
		}
	}
}

// checkRecord fails unless got is byte-identical to recordAt(offset).
func checkRecord(t testing.TB, offset int64, key, value []byte, headers []kgo.RecordHeader, ts time.Time) {
	t.Helper()
	want := recordAt("", int(offset))
	if !bytes.Equal(key, want.Key) || !bytes.Equal(value, want.Value) {
		t.Fatalf("offset %d: key %q value %x, want key %q value %x", offset, key, value, want.Key, want.Value)
	}
	if len(headers) != 1 || headers[0].Key != "i" || !bytes.Equal(headers[0].Value, want.Headers[0].Value) {
		t.Fatalf("offset %d: headers %v, want %v", offset, headers, want.Headers)
	}
	if !ts.Equal(want.Timestamp) {
		t.Fatalf("offset %d: timestamp %v, want %v", offset, ts, want.Timestamp)
	}
}

// consumeFranz reads partition 0 of topic from offset from up to (not
// including) to with franz-go and checks every record in order.
func consumeFranz(t testing.TB, addr, topic string, from, to int64) {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	ctx := ctxT(t, 90*time.Second)
	next := from
	for next < to {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("franz-go consume: reached offset %d of [%d,%d) before the deadline", next, from, to)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v (retried)", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= to {
				return
			}
			if r.Offset != next {
				t.Fatalf("franz-go consume: offset %d, want %d", r.Offset, next)
			}
			checkRecord(t, r.Offset, r.Key, r.Value, r.Headers, r.Timestamp)
			next++
		})
	}
}

// listOffset asks the leader of partition 0 for the offset of timestamp ts
// (or one of the special values -1, -2, -4, -5).
func listOffset(t testing.TB, addr, topic string, ts int64) int64 {
	t.Helper()
	cl := newClient(t, addr)
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t, 20*time.Second), cl)
	if err != nil {
		t.Fatalf("ListOffsets %d: %v", ts, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("ListOffsets %d: response %+v", ts, resp)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("ListOffsets %d: error code %d", ts, p.ErrorCode)
	}
	return p.Offset
}

// waitFor polls cond (proctest.Poll, every 50 ms) until it holds, failing
// the test once d has passed.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := proctest.Poll(d, 50*time.Millisecond, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitTiered waits until partition 0 of topic has at least minRemote
// CopyFinished segments and its local log start has passed minLocalStart.
func waitTiered(t testing.TB, n *broker.Node, topic string, minRemote int, minLocalStart int64) {
	t.Helper()
	waitFor(t, 90*time.Second, fmt.Sprintf("%s: %d remote segments and local log start >= %d", topic, minRemote, minLocalStart), func() bool {
		return len(finishedSegments(n, topic)) >= minRemote && localLogStart(n, topic) >= minLocalStart
	})
}

func localLogStart(n *broker.Node, topic string) int64 {
	for _, r := range n.Replicas().All() {
		if r.Topic() == topic && r.Partition() == 0 {
			return r.Log().LogStartOffset()
		}
	}
	return -1
}

// finishedSegments lists the CopyFinished remote segments of partition 0.
func finishedSegments(n *broker.Node, topic string) []controlplane.RemoteSegment {
	top, ok := n.Store().Topic(topic)
	if !ok {
		return nil
	}
	var out []controlplane.RemoteSegment
	for _, s := range n.RemoteLog().ListRemoteSegments(top.ID, 0) {
		if s.State == controlplane.CopyFinished {
			out = append(out, s)
		}
	}
	return out
}

// minioClient is an S3 client independent of Shale's own (aws-sdk-go-v2).
func minioClient(t testing.TB, endpoint string) *minio.Client {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(objstoretest.AccessKey, objstoretest.SecretKey, ""),
		Secure: false, Region: objstoretest.Region, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	return mc
}

// listBucket lists every object key in bucket through minio-go, sorted.
func listBucket(t testing.TB, mc *minio.Client, bucket string) []string {
	t.Helper()
	var keys []string
	for o := range mc.ListObjects(ctxT(t, 30*time.Second), bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatalf("minio list %s: %v", bucket, o.Err)
		}
		keys = append(keys, o.Key)
	}
	slices.Sort(keys)
	return keys
}

// bucketMatchesMetadata reports, as a description of the first mismatch
// ("" when none), whether the bucket (listed through minio-go) holds
// exactly the objects of the node's remote segment records, every record
// being CopyFinished (bucketMatchesRemoteLog on the node's RemoteLog).
func bucketMatchesMetadata(t testing.TB, n *broker.Node, mc *minio.Client, bucket string) string {
	t.Helper()
	return bucketMatchesRemoteLog(t, n.RemoteLog(), mc, bucket)
}

// waitBucketMatches waits until node n's bucket matches its remote metadata
// and fails with the last mismatch and the remote records otherwise.
func waitBucketMatches(t testing.TB, d time.Duration, n *broker.Node, mc *minio.Client, bucket string) {
	t.Helper()
	var last string
	if err := proctest.Poll(d, 100*time.Millisecond, func() bool {
		last = bucketMatchesMetadata(t, n, mc, bucket)
		return last == ""
	}); err != nil {
		rl := n.RemoteLog()
		var recs []string
		for _, id := range rl.RemoteTopicIDs() {
			for _, p := range rl.RemotePartitions(id) {
				for _, s := range rl.ListRemoteSegments(id, p) {
					if s.State != controlplane.CopyFinished {
						recs = append(recs, fmt.Sprintf("%s [%d,%d] %v epoch %d updated %v ago", s.SegmentID, s.BaseOffset, s.EndOffset,
							s.State, s.LeaderEpoch, time.Since(s.UpdatedAt).Round(time.Millisecond)))
					}
				}
			}
		}
		t.Fatalf("the bucket does not match the remote metadata after %v: %s\nrecords not CopyFinished: %v", d, last, recs)
	}
}

// tieredTopicRF3 waits until the three nodes are registered, creates topic
// (one partition, RF 3, tieredTopicConfig) and produces records 0 to n-1
// to it through the first node; it returns an admin client of that node.
func tieredTopicRF3(t testing.TB, ctx context.Context, nodes []*broker.Node, topic string, n int) *kadm.Client {
	t.Helper()
	adm := kadm.NewClient(newClient(t, nodes[0].KafkaAddr()))
	waitFor(t, 20*time.Second, "3 brokers", func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 3
	})
	resp, err := adm.CreateTopic(ctx, 1, 3, tieredTopicConfig, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	produceRange(t, nodes[0].KafkaAddr(), topic, 0, n)
	return adm
}
