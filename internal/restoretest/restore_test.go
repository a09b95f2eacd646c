package restoretest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/internal/proctest"
)

const (
	eventsTopic = "events"
	txnTopic    = "txns"
	group       = "g1"
	perPart     = 3000 // records per events partition
	txnCount    = 40   // transactions of txnSize records, every third aborted
	txnSize     = 20
)

// baseTime stamps record i of a partition at baseTime+i ms: the test
// binary's start (franz-go counts its delivery timeout from a record's
// timestamp, so older stamps would time out).
var baseTime = time.Now().Truncate(time.Millisecond)

func eventValue(p int32, i int) []byte {
	return fmt.Appendf(nil, "p%d-%06d-%s", p, i, strings.Repeat("x", i%50))
}

// TestClusterRestoreFromTheBucketAlone: three `shale serve` processes on
// one NATS server and one versitygw bucket hold tiered topics (one
// written by an idempotent producer, one by transactions of which every
// third is aborted) and a group's committed offsets (__consumer_offsets
// tiered). Then the cluster is destroyed: nodes killed, their data dirs
// and the NATS store removed. A new cluster (new NATS, new nodes) on the
// same bucket runs `shale cluster restore`: every uploaded record reads
// back once, at its offset, with its timestamp; read_committed hides the
// aborted transactions; the group resumes from its committed offsets;
// the report says how much was never uploaded; and both topics take new
// writes after their restored ends.
func TestClusterRestoreFromTheBucketAlone(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", objstoretest.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", objstoretest.SecretKey)
	t.Setenv("AWS_REGION", objstoretest.Region)
	srv := objstoretest.StartS3Server(t)
	bucket := srv.CreateBucket(t)
	opts := []proctest.ClusterOption{
		proctest.NodeFlags("--s3-endpoint", srv.Endpoint, "--s3-bucket", bucket, "--s3-region", objstoretest.Region,
			"--s3-path-style=true", "--tiering-interval", "200ms"),
		proctest.NodeEnv("AWS_EC2_METADATA_DISABLED=true"),
	}
	ctx := proctest.Context(t, 8*time.Minute)

	old := proctest.StartCluster(t, shaleBin, []int32{1, 2, 3}, append(opts, proctest.ClusterName("old"))...)
	cl := old.Client()
	adm := kadm.NewClient(cl)
	tiered := map[string]*string{"remote.storage.enable": kmsg.StringPtr("true"), "segment.bytes": kmsg.StringPtr("16384"),
		"min.insync.replicas": kmsg.StringPtr("2")}
	for topic, parts := range map[string]int32{eventsTopic: 2, txnTopic: 1} {
		if topic == txnTopic {
			tiered["segment.bytes"] = kmsg.StringPtr("4096")
		}
		resp, err := adm.CreateTopic(ctx, parts, 3, tiered, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}
	produceEvents(t, ctx, old)
	committed, aborted := produceTransactions(t, ctx, old)

	// The group's offsets, then __consumer_offsets tiered (small
	// segments, all kept locally) and the same offsets committed again
	// until the segment with the first commit is uploaded.
	want := kadm.Offsets{}
	want.Add(kadm.Offset{Topic: eventsTopic, Partition: 0, At: 1000, LeaderEpoch: -1})
	want.Add(kadm.Offset{Topic: eventsTopic, Partition: 1, At: 1700, LeaderEpoch: -1})
	want.Add(kadm.Offset{Topic: txnTopic, Partition: 0, At: 100, LeaderEpoch: -1})
	commit(t, ctx, adm, want)
	alter := []kadm.AlterConfig{{Name: "remote.storage.enable", Value: kmsg.StringPtr("true")},
		{Name: "segment.bytes", Value: kmsg.StringPtr("1024")},
		{Name: "local.retention.bytes", Value: kmsg.StringPtr("-1")}, {Name: "local.retention.ms", Value: kmsg.StringPtr("-1")}}
	ar, err := adm.AlterTopicConfigs(ctx, alter, "__consumer_offsets")
	if err == nil {
		err = ar[0].Err
	}
	if err != nil {
		t.Fatalf("tiering __consumer_offsets: %v", err)
	}
	waitFor(t, 90*time.Second, "a tiered __consumer_offsets segment", func() bool {
		commit(t, ctx, adm, want)
		return anyTiered(ctx, cl, "__consumer_offsets")
	})
	// Most of each topic uploaded: all but the active segment.
	// (16 KiB segments hold a few hundred records, 4 KiB ones about 50.)
	slack := map[string]int64{eventsTopic: 1000, txnTopic: 300}
	for topic, ends := range map[string][]int64{eventsTopic: {perPart, perPart}, txnTopic: {int64(txnCount * (txnSize + 1))}} {
		for p, end := range ends {
			waitFor(t, 90*time.Second, fmt.Sprintf("%s-%d tiered near its end", topic, p), func() bool {
				v := lastTiered(ctx, cl, topic, int32(p))
				if v < end-slack[topic] {
					t.Logf("%s-%d: last tiered %d, end %d, high watermark %d", topic, p, v, end, listOffset(ctx, cl, topic, int32(p), -1))
				}
				return v >= end-slack[topic]
			})
		}
	}
	old.Destroy()

	fresh := proctest.StartCluster(t, shaleBin, []int32{1, 2, 3}, append(opts, proctest.ClusterName("new"))...)
	n1 := fresh.Node(1)
	shale := func(args ...string) adminapi.RestoreReport {
		t.Helper()
		out, err := exec.CommandContext(ctx, shaleBin, append(args, "--admin", n1.Admin(), "--bootstrap", n1.Kafka(),
			"--output", "json")...).CombinedOutput()
		if err != nil {
			t.Fatalf("shale %v: %v\n%s", args, err, out)
		}
		var rep adminapi.RestoreReport
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("restore report: %v\n%s", err, out)
		}
		return rep
	}
	dry := shale("topic", "restore", eventsTopic, "--dry-run")
	if len(dry.Topics) != 1 || dry.Topics[0].Status != "planned" || len(dry.Topics[0].GroupOffsets) != 2 {
		t.Fatalf("dry run: %+v", dry.Topics)
	}
	if topics, err := kadm.NewClient(fresh.Client()).ListTopics(ctx); err != nil || topics.Has(eventsTopic) {
		t.Fatalf("after a dry run: topics %v, %v", topics.Names(), err)
	}
	rep := shale("cluster", "restore")
	t.Logf("restore report: format %d, group offsets: %s", rep.FormatVersion, rep.GroupOffsets)
	if rep.FormatVersion != 1 {
		t.Errorf("bucket format version %d, want 1", rep.FormatVersion)
	}
	ends := map[string][]adminapi.RestoredPartition{}
	for _, tp := range rep.Topics {
		t.Logf("%s: %s, %d partitions, missing %q", tp.Topic, tp.Status, tp.Partitions, tp.Missing)
		if tp.Status != "restored" || !tp.Descriptor {
			t.Fatalf("%s: status %s (descriptor %v): %s", tp.Topic, tp.Status, tp.Descriptor, tp.Error)
		}
		ends[tp.Topic] = tp.Partition
		for _, p := range tp.Partition {
			if p.NotUploaded < 0 || p.HighWatermarkAtLastUpload < p.NextOffset {
				t.Errorf("%s-%d: high watermark at the last upload %d, restored end %d, not uploaded %d",
					tp.Topic, p.Partition, p.HighWatermarkAtLastUpload, p.NextOffset, p.NotUploaded)
			}
			if len(p.Gaps) > 0 || p.LogStartOffset != 0 {
				t.Errorf("%s-%d: log start %d, gaps %v", tp.Topic, p.Partition, p.LogStartOffset, p.Gaps)
			}
		}
	}
	if len(ends[eventsTopic]) != 2 || len(ends[txnTopic]) != 1 || len(rep.Topics) != 2 {
		t.Fatalf("restored topics: %+v", rep.Topics)
	}

	if again := shale("topic", "restore", eventsTopic); again.Topics[0].Status != "exists" {
		t.Fatalf("a restore run again: %+v", again.Topics)
	}
	ncl := fresh.Client()
	nadm := kadm.NewClient(ncl)
	for _, p := range ends[eventsTopic] {
		checkEvents(t, ctx, fresh, p.Partition, p.NextOffset)
	}
	checkTransactions(t, ctx, fresh, ends[txnTopic][0].NextOffset, committed, aborted)

	got, err := nadm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	want.Each(func(o kadm.Offset) {
		g, ok := got.Lookup(o.Topic, o.Partition)
		if !ok || g.At != o.At {
			t.Errorf("group %s %s-%d: committed %+v after the restore, want %d", group, o.Topic, o.Partition, g, o.At)
		}
	})
	resumeGroup(t, ctx, fresh, want)

	// New writes continue each topic where the restore ended it.
	pcl := fresh.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	r := &kgo.Record{Topic: eventsTopic, Partition: 0, Value: []byte("after")}
	if err := pcl.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatalf("produce after the restore: %v", err)
	}
	if r.Offset != ends[eventsTopic][0].NextOffset {
		t.Errorf("first record after the restore at offset %d, want %d", r.Offset, ends[eventsTopic][0].NextOffset)
	}
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := proctest.Poll(d, 200*time.Millisecond, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func commit(t *testing.T, ctx context.Context, adm *kadm.Client, os kadm.Offsets) {
	t.Helper()
	resp, err := adm.CommitOffsets(ctx, group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// listOffset is ListOffsets of one special timestamp on a partition; -1 on an error.
func listOffset(ctx context.Context, cl *kgo.Client, topic string, p int32, ts int64) int64 {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	shards := cl.RequestSharded(ctx, req)
	for _, sh := range shards {
		if sh.Err != nil {
			return -1
		}
		resp := sh.Resp.(*kmsg.ListOffsetsResponse)
		for _, t := range resp.Topics {
			for _, r := range t.Partitions {
				if r.ErrorCode != 0 {
					return -1
				}
				return r.Offset
			}
		}
	}
	return -1
}

func lastTiered(ctx context.Context, cl *kgo.Client, topic string, p int32) int64 {
	return listOffset(ctx, cl, topic, p, -5)
}

func anyTiered(ctx context.Context, cl *kgo.Client, topic string) bool {
	for p := range int32(50) {
		if lastTiered(ctx, cl, topic, p) >= 0 {
			return true
		}
	}
	return false
}

func produceEvents(t *testing.T, ctx context.Context, c *proctest.Cluster) {
	t.Helper()
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(4096),
		kgo.ProducerLinger(time.Millisecond), kgo.RecordDeliveryTimeout(10*time.Minute))
	for p := range int32(2) {
		var recs []*kgo.Record
		for i := range perPart {
			recs = append(recs, &kgo.Record{Topic: eventsTopic, Partition: p, Key: fmt.Appendf(nil, "k%d", i),
				Value: eventValue(p, i), Timestamp: baseTime.Add(time.Duration(i) * time.Millisecond)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce %s-%d: %v", eventsTopic, p, err)
		}
		for i, r := range recs {
			if r.Offset != int64(i) {
				t.Fatalf("%s-%d: record %d at offset %d", eventsTopic, p, i, r.Offset)
			}
		}
	}
}

// produceTransactions writes txnCount transactions to txnTopic and
// returns the offsets of the committed and of the aborted records, with
// their values.
func produceTransactions(t *testing.T, ctx context.Context, c *proctest.Cluster) (committed, aborted map[int64]string) {
	t.Helper()
	committed, aborted = map[int64]string{}, map[int64]string{}
	cl := c.Client(kgo.TransactionalID("restore-txn"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic(txnTopic), kgo.RecordDeliveryTimeout(2*time.Minute))
	for x := range txnCount {
		abort := x%3 == 2
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := range txnSize {
			kind := "c"
			if abort {
				kind = "a"
			}
			recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "%s-%03d-%02d-%s", kind, x, i, strings.Repeat("y", 40))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("transaction %d: %v", x, err)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(!abort)); err != nil {
			t.Fatalf("end transaction %d: %v", x, err)
		}
		for _, r := range recs {
			if abort {
				aborted[r.Offset] = string(r.Value)
			} else {
				committed[r.Offset] = string(r.Value)
			}
		}
	}
	return committed, aborted
}

// checkEvents reads events partition p from 0 to end and checks every
// record, in order, once; the partition's high watermark must be end.
func checkEvents(t *testing.T, ctx context.Context, c *proctest.Cluster, p int32, end int64) {
	t.Helper()
	if end < perPart/2 {
		t.Fatalf("%s-%d: only %d offsets restored of %d", eventsTopic, p, end, perPart)
	}
	lcl := c.Client()
	waitFor(t, 60*time.Second, fmt.Sprintf("%s-%d led at its restored end", eventsTopic, p), func() bool {
		return listOffset(ctx, lcl, eventsTopic, p, -1) == end
	})
	cl := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{eventsTopic: {p: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	next := int64(0)
	for next < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s-%d: read up to %d of %d", eventsTopic, p, next, end)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch %s-%d: %v (retried)", eventsTopic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next {
				t.Fatalf("%s-%d: offset %d, want %d", eventsTopic, p, r.Offset, next)
			}
			i := int(r.Offset)
			if !bytes.Equal(r.Value, eventValue(p, i)) || string(r.Key) != fmt.Sprintf("k%d", i) {
				t.Fatalf("%s-%d offset %d: key %q value %q", eventsTopic, p, i, r.Key, r.Value)
			}
			if ts := baseTime.Add(time.Duration(i) * time.Millisecond); !r.Timestamp.Equal(ts) {
				t.Fatalf("%s-%d offset %d: timestamp %v, want %v", eventsTopic, p, i, r.Timestamp, ts)
			}
			next++
		})
	}
}

// checkTransactions reads the transactional topic to end, read_committed
// and read_uncommitted: the first sees exactly the committed records
// below end, the second the aborted ones too.
func checkTransactions(t *testing.T, ctx context.Context, c *proctest.Cluster, end int64, committed, aborted map[int64]string) {
	t.Helper()
	for _, level := range []kgo.IsolationLevel{kgo.ReadCommitted(), kgo.ReadUncommitted()} {
		cl := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{txnTopic: {0: kgo.NewOffset().At(0)}}),
			kgo.FetchIsolationLevel(level), kgo.FetchMaxWait(200*time.Millisecond))
		want := map[int64]string{}
		for o, v := range committed {
			if o < end {
				want[o] = v
			}
		}
		if level == kgo.ReadUncommitted() {
			for o, v := range aborted {
				if o < end {
					want[o] = v
				}
			}
		}
		got := map[int64]string{}
		last := int64(-1)
		for last < end-2 && len(got) < len(want) {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s (%v): %d of %d records read", txnTopic, level, len(got), len(want))
			}
			fs.EachRecord(func(r *kgo.Record) {
				if _, dup := got[r.Offset]; dup {
					t.Fatalf("%s: offset %d read twice", txnTopic, r.Offset)
				}
				if r.Offset < end {
					got[r.Offset] = string(r.Value)
				}
				last = max(last, r.Offset)
			})
		}
		if len(got) != len(want) {
			t.Fatalf("%s (%v): %d records, want %d", txnTopic, level, len(got), len(want))
		}
		for o, v := range want {
			if got[o] != v {
				t.Fatalf("%s (%v): offset %d holds %q, want %q", txnTopic, level, o, got[o], v)
			}
		}
		cl.Close()
	}
	aborts := 0
	for o := range aborted {
		if o < end {
			aborts++
		}
	}
	if aborts == 0 {
		t.Fatalf("no aborted record below the restored end %d: the test proves nothing", end)
	}
}

// resumeGroup joins the group with a franz-go consumer and checks that
// the first record of each partition it gets is at the committed offset.
func resumeGroup(t *testing.T, ctx context.Context, c *proctest.Cluster, want kadm.Offsets) {
	t.Helper()
	cl := c.Client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(eventsTopic, txnTopic), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	first := map[string]map[int32]int64{}
	seen := 0
	for seen < 3 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group %s: first records %v", group, first)
		}
		if err := fs.Err(); err != nil && !kerr.IsRetriable(err) {
			t.Logf("group fetch: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if first[r.Topic] == nil {
				first[r.Topic] = map[int32]int64{}
			}
			if _, ok := first[r.Topic][r.Partition]; !ok {
				first[r.Topic][r.Partition] = r.Offset
				seen++
			}
		})
	}
	want.Each(func(o kadm.Offset) {
		// read_committed skips an aborted record at the committed offset:
		// the first record is at it or after, never before.
		got := first[o.Topic][o.Partition]
		if got < o.At || (o.Topic == eventsTopic && got != o.At) {
			t.Errorf("group %s resumed %s-%d at %d, committed %d", group, o.Topic, o.Partition, got, o.At)
		}
	})
}
