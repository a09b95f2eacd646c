package replicationtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/segment/batch"
)

// TestRestartedLeaderKeepsUncommittedHidden is issue 15 item 4: a leader
// whose followers are dead (ISR {L}, min.insync.replicas=2) takes acks=1
// writes above its high watermark; it is stopped and restarted alone. Those writes were never committed: no consumer may see them and
// tiering may not upload them (the topic tiers to a versitygw bucket with
// small segments, so they fill closed segments). Before the high watermark
// checkpoint, the restarted replica opened leading with its high watermark
// at its log end, and both happened. When the followers return, the writes
// are replicated and committed, and every record reads back once, at the
// offset it was written at.
func TestRestartedLeaderKeepsUncommittedHidden(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", objstoretest.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", objstoretest.SecretKey)
	t.Setenv("AWS_REGION", objstoretest.Region)
	s3 := objstoretest.StartS3Server(t)
	bucket := s3.CreateBucket(t)
	c := startCluster(t, "hwckpt", 1,
		"--s3-endpoint", s3.Endpoint, "--s3-bucket", bucket, "--s3-path-style", "--s3-region", objstoretest.Region,
		"--tiering-interval", "200ms",
		"--topic-default", "segment.bytes=2048",
		"--topic-default", "remote.storage.enable=true")
	ctx := proctest.Context(t, 5*time.Minute)
	leaderID, _ := c.leaderOf(0, 30*time.Second)
	leader := c.node(leaderID)
	b, err := leader.seed()
	if err != nil {
		t.Fatal(err)
	}

	// Committed: acks=all, one record per batch, so segments roll often.
	const committed, uncommitted = 200, 120
	for i := range committed {
		if code, off, err := rawProduce(ctx, b, c.topic, 0, -1, fmt.Sprintf("c-%d", i)); err != nil || code != 0 || off != int64(i) {
			t.Fatalf("acks=all record %d: code %d offset %d (%v)", i, code, off, err)
		}
	}
	// Tiering works: committed closed segments reach the bucket.
	if err := proctest.WaitFor(30*time.Second, func() bool {
		st, err := tierStatus(ctx, leader, c.topic)
		return err == nil && st.LastTieredOffset > committed/2
	}); err != nil {
		t.Fatal("committed segments not uploaded")
	}

	for _, n := range c.nodes {
		if n.id != leaderID {
			n.Kill()
		}
	}
	if err := proctest.WaitFor(30*time.Second, func() bool {
		pv, err := leader.Partition(ctx, c.topic, 0)
		return err == nil && slices.Equal(pv.ISR, []int32{leaderID})
	}); err != nil {
		t.Fatalf("the ISR did not shrink to node %d", leaderID)
	}
	// franz-go sends a raw ProduceRequest with its client's acks, so the
	// acks=1 writes go through a client configured for them.
	cl1, err := kgo.NewClient(kgo.SeedBrokers(leader.Kafka()), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl1.Close()
	b1 := cl1.SeedBrokers()[0]
	for i := range uncommitted {
		if code, off, err := rawProduce(ctx, b1, c.topic, 0, 1, fmt.Sprintf("u-%d", i)); err != nil || code != 0 || off != int64(committed+i) {
			t.Fatalf("acks=1 record %d: code %d offset %d (%v)", i, code, off, err)
		}
	}
	if hw, err := listOffsetOn(ctx, leader, c.topic, 0, -1); err != nil || hw != committed {
		t.Fatalf("high watermark %d (%v) with ISR {%d}, want %d", hw, err, leaderID, committed)
	}

	// A clean stop (SIGTERM): the node restarts trusted and leads alone
	// again. (Killed, it would restart uncleanly, and the controller keeps
	// the partition offline until every candidate is back and elects the
	// longest log, KIP-966; the crash case is TestReopenAfterCrashKeepsCheckpointedHW
	// in partition.)
	if code, _ := leader.Stop(30 * time.Second); code != 0 {
		t.Fatalf("node %d exited with %d on SIGTERM", leaderID, code)
	}
	leader.Start()
	leader.WaitReady()
	if l, _ := c.leaderOf(0, 60*time.Second); l != leaderID {
		t.Fatalf("node %d leads after the restart, want %d", l, leaderID)
	}
	// Give tiering time to act on the restarted replica: a few passes,
	// counted by the node itself, after it took the role.
	if err := proctest.WaitFor(30*time.Second, func() bool {
		n, err := tieringPasses(ctx, leader)
		return err == nil && n >= 5
	}); err != nil {
		t.Fatalf("node %d ran no tiering passes after its restart: %v", leaderID, err)
	}
	st, err := tierStatus(ctx, leader, c.topic)
	if err != nil {
		t.Fatal(err)
	}
	hw, err := listOffsetOn(ctx, leader, c.topic, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the restart: high watermark %d, last tiered offset %d, log end %d", hw, st.LastTieredOffset, committed+uncommitted)
	if hw > committed {
		t.Errorf("the restarted leader's high watermark is %d, past the %d committed records", hw, committed)
	}
	if st.LastTieredOffset >= committed {
		t.Errorf("uncommitted records uploaded: last tiered offset %d, committed %d", st.LastTieredOffset, committed)
	}
	vals, err := readValues(ctx, leader, c.topic, 0, 0, max(hw, committed+uncommitted))
	if err != nil {
		t.Fatal(err)
	}
	for off, v := range vals {
		if !strings.HasPrefix(v, "c-") {
			t.Errorf("a consumer read %q at offset %d, never committed", v, off)
			break
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// The followers return: the writes are replicated and committed.
	for _, n := range c.nodes {
		if n.id != leaderID {
			n.Start()
		}
	}
	for _, n := range c.nodes {
		n.WaitReady()
	}
	c.waitSettled(90 * time.Second)
	if err := proctest.WaitFor(30*time.Second, func() bool {
		hw, err := listOffsetOn(ctx, leader, c.topic, 0, -1)
		return err == nil && hw == committed+uncommitted
	}); err != nil {
		t.Fatalf("the high watermark did not reach %d", committed+uncommitted)
	}
	vals, err = readValues(ctx, leader, c.topic, 0, 0, committed+uncommitted)
	if err != nil {
		t.Fatal(err)
	}
	for i := range committed + uncommitted {
		want := fmt.Sprintf("c-%d", i)
		if i >= committed {
			want = fmt.Sprintf("u-%d", i-committed)
		}
		if vals[int64(i)] != want {
			t.Fatalf("offset %d holds %q, want %q", i, vals[int64(i)], want)
		}
	}
	c.checkReplicasIdentical(30 * time.Second)
	proctest.CheckEpochs(t, c.Nodes())
	c.CheckNoPanic()
}

// tierStatus is n's tier status line for partition 0 of topic.
func tierStatus(ctx context.Context, n *node, topic string) (adminapi.TierPartitionStatus, error) {
	st, err := adminapi.Client{Timeout: 5 * time.Second}.TierStatus(ctx, n.Admin(), topic)
	if err != nil {
		return adminapi.TierPartitionStatus{}, err
	}
	for _, p := range st.Partitions {
		if p.Topic == topic && p.Partition == 0 {
			return p, nil
		}
	}
	return adminapi.TierPartitionStatus{}, fmt.Errorf("node %d: no tier status for %s-0", n.id, topic)
}

// tieringPasses is n's shale_tiering_passes_total (its current run's).
func tieringPasses(ctx context.Context, n *node) (float64, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, "http://"+n.Admin()+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "shale_tiering_passes_total "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, errors.New("no shale_tiering_passes_total")
}

// readValues fetches partition p of topic from n as a consumer from offset
// from until the high watermark or offset to, whichever comes first, and
// returns the records' values by offset.
func readValues(ctx context.Context, n *node, topic string, p int32, from, to int64) (map[int64]string, error) {
	b, err := n.seed()
	if err != nil {
		return nil, err
	}
	id, err := proctest.TopicID(ctx, b, topic)
	if err != nil {
		return nil, err
	}
	out := map[int64]string{}
	for off, round := from, 0; off < to; round++ {
		if round > 10_000 {
			return nil, fmt.Errorf("reading %s-%d: no end after %d fetches at %d", topic, p, round, off)
		}
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.FetchOffset, rp.PartitionMaxBytes = p, -1, off, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		kresp, err := b.Request(rctx, req)
		cancel()
		if err != nil {
			return nil, err
		}
		resp := kresp.(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return nil, fmt.Errorf("fetch at %d: error %d", off, resp.ErrorCode)
		}
		part := resp.Topics[0].Partitions[0]
		if part.ErrorCode != 0 {
			return nil, fmt.Errorf("fetch at %d: partition error %d", off, part.ErrorCode)
		}
		next := off
		err = batch.Split(part.RecordBatches, func(h *batch.Header, raw []byte) error {
			recs, err := batch.Records(raw, 1<<20)
			if err != nil {
				return err
			}
			for _, r := range recs {
				o := h.BaseOffset + int64(r.OffsetDelta)
				if o >= off && o < to {
					out[o] = string(r.Value)
				}
			}
			next = max(next, h.NextOffset())
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("fetch at %d: %w", off, err)
		}
		if next == off { // nothing more below the high watermark
			if off < part.HighWatermark {
				return nil, fmt.Errorf("fetch at %d: no records below the high watermark %d", off, part.HighWatermark)
			}
			break
		}
		off = next
	}
	return out, nil
}
