package replicationtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/segment/batch"
)

// TestEmptyDiskRejoinFromBucket is KIP-405's follower path: three nodes
// share one S3 bucket (versitygw), the topic has small segments, a short
// local retention and remote storage on, so most of its history is only in
// the bucket. A follower is killed, its data dir deleted, and restarted: it
// must rejoin the ISR without copying history — its local log starts at
// the leader's local log start, rebuilt from the remote tail's epochs and
// producer snapshot — and hold the leader's bytes above that. Then it is
// made leader: every acknowledged record must read back exactly once from
// offset 0 through it (the cold tier below its local log), and a retry of
// an idempotent producer's last batch, written only in history now in the
// bucket, must be answered as a duplicate rather than written again.
func TestEmptyDiskRejoinFromBucket(t *testing.T) {
	begin := time.Now()
	t.Setenv("AWS_ACCESS_KEY_ID", objstoretest.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", objstoretest.SecretKey)
	t.Setenv("AWS_REGION", objstoretest.Region)
	s3 := objstoretest.StartS3Server(t)
	bucket := s3.CreateBucket(t)
	c := startCluster(t, "bucketrejoin", 1,
		"--s3-endpoint", s3.Endpoint, "--s3-bucket", bucket, "--s3-path-style", "--s3-region", objstoretest.Region,
		"--tiering-interval", "200ms",
		"--topic-default", "segment.bytes=8192",
		"--topic-default", "local.retention.bytes=16384",
		"--topic-default", "remote.storage.enable=true")
	ctx := proctest.Context(t, 5*time.Minute)
	leader, _ := c.leaderOf(0, 30*time.Second)

	// An idempotent producer that writes five batches now and never again:
	// its state reaches a replica only through the producer snapshots.
	idem := newRawIdempotent(t, ctx, c.node(leader))
	var idemOffsets []int64
	for i := range 5 {
		off, err := idem.produce(ctx, c.node(leader), c.topic, 0, int32(i))
		if err != nil {
			t.Fatalf("idempotent batch %d: %v", i, err)
		}
		idemOffsets = append(idemOffsets, off)
	}

	lp := c.startProducer(2*time.Millisecond, 20_000)
	lp.waitAcked(1500, 90*time.Second)
	var before int64
	if err := proctest.WaitFor(60*time.Second, func() bool {
		local, err1 := listOffsetOn(ctx, c.node(leader), c.topic, 0, -4)
		hw, err2 := listOffsetOn(ctx, c.node(leader), c.topic, 0, -1)
		before = local
		return err1 == nil && err2 == nil && local > hw/2 && local > idemOffsets[4]
	}); err != nil {
		t.Fatalf("the leader's local log start did not pass half the log: %d", before)
	}

	wiped := c.node(leader%3 + 1)
	other := c.node(6 - leader - wiped.id)
	wiped.Kill()
	if err := os.RemoveAll(wiped.DataDir()); err != nil {
		t.Fatal(err)
	}
	lp.waitAcked(300, 30*time.Second) // history moves on while it is down
	wiped.Start()
	wiped.WaitReady()
	c.waitSettled(90 * time.Second) // back in the ISR
	lp.waitAcked(300, 30*time.Second)
	lp.stop()
	if l, _ := c.leaderOf(0, 30*time.Second); l != leader {
		t.Fatalf("leadership moved from node %d to %d during the rejoin", leader, l)
	}

	// It started at the leader's local log start, not at 0. The leader's
	// local retention keeps running under the load, so its local log start
	// can pass the rebuilt end before the first fetch there: the follower
	// then rebuilds again from where it stands (seen once in make test:
	// 0 -> 1546, then 1546 -> 1927, 50 ms apart). Each rebuild must take
	// the follower from the previous one's end to the leader's local log
	// start of the time, so no history is ever copied.
	rebuilt := wiped.LogLines("follower rebuilt from the remote tail")
	if len(rebuilt) == 0 {
		t.Fatalf("node %d logged no rebuild from the remote tail", wiped.id)
	}
	from := "0"
	var start int64
	for i, r := range rebuilt {
		to, err := strconv.ParseInt(r["to"], 10, 64)
		if err != nil || r["from"] != from || r["leader_local_start"] != r["to"] || to < before {
			t.Fatalf("rebuild %d of %d %v: want from %s to the leader's local log start (at least %d)", i+1, len(rebuilt), r, from, before)
		}
		from, start = r["to"], to
	}
	if n := wiped.CountLines("follower truncating divergent tail"); n != 0 {
		t.Fatalf("node %d truncated %d times", wiped.id, n)
	}
	leaderLocal, err := listOffsetOn(ctx, c.node(leader), c.topic, 0, -4)
	if err != nil || leaderLocal < start {
		t.Fatalf("leader's local log start %d (%v) below the rebuilt follower's %d", leaderLocal, err, start)
	}
	hw, err := listOffsetOn(ctx, c.node(leader), c.topic, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	// Above its start, byte for byte the other replicas' batches up to the
	// high watermark, and its epoch history the leader's, from the log start. Local retention
	// runs on every replica (followers too, once the leader's uploads cover
	// their segments), so each one's first local offset moves on: the
	// rebuilt one's never below where it started; they are compared from
	// the highest of the three.
	var last string
	if err := proctest.WaitFor(30*time.Second, func() bool {
		firsts := map[int32]int64{}
		for _, n := range []*node{wiped, other, c.node(leader)} {
			f, _, err := localBatches(n.partitionDir(c.topic, 0), 0, hw)
			if err != nil {
				last = fmt.Sprintf("node %d: %v", n.id, err)
				return false
			}
			firsts[n.id] = f
		}
		if firsts[wiped.id] < start {
			last = fmt.Sprintf("node %d: first local offset %d, below its rebuild at %d", wiped.id, firsts[wiped.id], start)
			return false
		}
		common := max(firsts[wiped.id], firsts[other.id], firsts[leader])
		_, ref, err := localBatches(wiped.partitionDir(c.topic, 0), common, hw)
		if err != nil {
			last = fmt.Sprintf("node %d from %d: %v", wiped.id, common, err)
			return false
		}
		for _, n := range []*node{other, c.node(leader)} {
			_, b, err := localBatches(n.partitionDir(c.topic, 0), common, hw)
			if err != nil || !bytes.Equal(b, ref) {
				last = fmt.Sprintf("node %d: %d bytes from %d (%v), node %d %d", n.id, len(b), common, err, wiped.id, len(ref))
				return false
			}
		}
		le, err1 := readEpochFile(c.node(leader).partitionDir(c.topic, 0))
		we, err2 := readEpochFile(wiped.partitionDir(c.topic, 0))
		// The whole history, from the partition's log start (0, in the
		// bucket), not only from the local logs' start: both keep the epochs
		// of the remote data (issue 16 item 4).
		if err1 != nil || err2 != nil || len(le) == 0 || le[0].start != 0 || !slices.Equal(we, le) {
			last = fmt.Sprintf("epochs from %d: leader %v (%v), node %d %v (%v)", common, le, err1, wiped.id, we, err2)
			return false
		}
		return true
	}); err != nil {
		t.Fatalf("replica logs after the rejoin: %s", last)
	}
	t.Logf("node %d rejoined from the bucket at offset %d (leader's local log start %d, high watermark %d) after %v",
		wiped.id, start, leaderLocal, hw, time.Since(begin).Round(time.Second))

	// Make it the leader: the only live in-sync replica once the other two
	// die, then one of them back so that the high watermark can move.
	other.Kill()
	c.node(leader).Kill()
	if l, _ := c.leaderOf(0, 60*time.Second); l != wiped.id {
		t.Fatalf("node %d leads, want the rebuilt node %d", l, wiped.id)
	}
	other.Start()
	other.WaitReady()
	if err := proctest.WaitFor(60*time.Second, func() bool {
		pv, err := wiped.Partition(ctx, c.topic, 0)
		return err == nil && pv.Leader == wiped.id && slices.Contains(pv.ISR, other.id)
	}); err != nil {
		t.Fatalf("node %d did not rejoin the ISR of the rebuilt leader", other.id)
	}

	// The retried last batch of the idempotent producer is a duplicate,
	// answered with its original offset; its state came from the bucket.
	off, err := idem.produce(ctx, wiped, c.topic, 0, 4)
	if err != nil || off != idemOffsets[4] {
		t.Fatalf("retried idempotent batch: offset %d (%v), want the original %d", off, err, idemOffsets[4])
	}
	n, extras := lp.checkAcked(t)
	for i, o := range idemOffsets {
		if got, ok := extras[fmt.Sprintf("x-idem-%d", i)]; !ok || got != o {
			t.Fatalf("idempotent record %d at %d (%v), want %d", i, got, ok, o)
		}
	}
	if len(extras) != len(idemOffsets) {
		t.Fatalf("records written by the test: %v", extras)
	}
	t.Logf("read back %d records from offset 0 through node %d; %s; total %v", n, wiped.id, lp.summary(), time.Since(begin).Round(time.Second))
	proctest.CheckEpochs(t, c.Nodes())
	c.CheckNoPanic()
}

// rawIdempotent is an idempotent producer (InitProducerId, explicit
// sequence numbers) whose batches a test can resend.
type rawIdempotent struct {
	id    int64
	epoch int16
}

func newRawIdempotent(t *testing.T, ctx context.Context, n *node) *rawIdempotent {
	t.Helper()
	b, err := n.seed()
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis = -1
	kresp, err := b.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("InitProducerId: error %d", resp.ErrorCode)
	}
	return &rawIdempotent{id: resp.ProducerID, epoch: resp.ProducerEpoch}
}

// produce sends the one-record batch with sequence seq and value
// "x-idem-<seq>" to n with acks=all and returns its offset.
func (r *rawIdempotent) produce(ctx context.Context, n *node, topic string, p, seq int32) (int64, error) {
	b, err := n.seed()
	if err != nil {
		return 0, err
	}
	opts := batch.NoProducer()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = r.id, r.epoch, seq
	opts.FirstTimestamp = time.Now().UnixMilli()
	records, err := batch.Build(nil, opts, []batch.Record{{Value: fmt.Appendf(nil, "x-idem-%d", seq)}})
	if err != nil {
		return 0, err
	}
	rp, err := produceBatch(ctx, b, topic, p, -1, 5000, records)
	if err != nil {
		return 0, err
	}
	if rp.ErrorCode != 0 {
		return 0, fmt.Errorf("produce: error %d", rp.ErrorCode)
	}
	return rp.BaseOffset, nil
}

// listOffsetOn asks n (its own partition's leader) ListOffsets for one
// timestamp of partition p: -1 the high watermark, -2 the log start, -4
// the local log start.
func listOffsetOn(ctx context.Context, n *node, topic string, p int32, ts int64) (int64, error) {
	b, err := n.seed()
	if err != nil {
		return 0, err
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := b.Request(rctx, req)
	if err != nil {
		return 0, err
	}
	resp := kresp.(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, errors.New("malformed ListOffsets response")
	}
	r := resp.Topics[0].Partitions[0]
	if r.ErrorCode != 0 {
		return 0, fmt.Errorf("ListOffsets %d: error %d", ts, r.ErrorCode)
	}
	return r.Offset, nil
}

// localBatches returns the first batch offset at or above from in a
// partition directory, and the bytes of the batches from there up to hw.
func localBatches(dir string, from, hw int64) (int64, []byte, error) {
	all, first, err := batchesBelow(dir, hw)
	if err != nil {
		return -1, nil, err
	}
	for pos := 0; pos < len(all); {
		h, err := batch.ParseHeader(all[pos:])
		if err != nil {
			return -1, nil, err
		}
		if h.BaseOffset >= from {
			return h.BaseOffset, all[pos:], nil
		}
		pos += h.Size()
	}
	return first, nil, fmt.Errorf("%s: no batch at or above %d below %d", dir, from, hw)
}

// epochEntry is one line of a leader-epoch-checkpoint file.
type epochEntry struct {
	epoch int32
	start int64
}

// readEpochFile parses a partition's leader-epoch-checkpoint.
func readEpochFile(dir string) ([]epochEntry, error) {
	data, err := os.ReadFile(filepath.Join(dir, "leader-epoch-checkpoint"))
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	var out []epochEntry
	for i := 0; sc.Scan(); i++ {
		if i < 2 { // version, count
			continue
		}
		var e epochEntry
		if _, err := fmt.Sscanf(strings.TrimSpace(sc.Text()), "%d %d", &e.epoch, &e.start); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", dir, sc.Text(), err)
		}
		out = append(out, e)
	}
	return out, nil
}
