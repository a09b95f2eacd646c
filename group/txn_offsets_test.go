package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/partition"
)

func txnCommitOne(t *testing.T, c *Coordinator, grp string, pid int64, epoch int16, topic string, p int32, offset int64) int16 {
	t.Helper()
	req := kmsg.NewTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = 3, "tx", grp, pid, epoch, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = p, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := serve(t, c.handleTxnOffsetCommit, &req, func(r *kmsg.TxnOffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
	return resp.Topics[0].Partitions[0].ErrorCode
}

// fetchStable is OffsetFetch with RequireStable: the offset and the code.
func fetchStable(t *testing.T, c *Coordinator, grp, topic string, p int32) (int64, int16) {
	t.Helper()
	req := offsetFetchOne(8, grp, topic, p)
	req.RequireStable = true
	resp := serve(t, c.handleOffsetFetch, req, func(r *kmsg.OffsetFetchResponse) int16 { return r.Groups[0].ErrorCode })
	op := resp.Groups[0].Topics[0].Partitions[0]
	return op.Offset, op.ErrorCode
}

func marker(t *testing.T, c *Coordinator, rep *partition.Replica, pid int64, epoch int16, commit bool) {
	t.Helper()
	if _, err := rep.AppendTxnMarker(partition.TxnMarker{ProducerID: pid, ProducerEpoch: epoch, CoordinatorEpoch: 0, Commit: commit}); err != nil {
		t.Fatal(err)
	}
	if c != nil {
		c.CompleteTxn(0, pid, commit)
	}
}

// TestTxnOffsets: transactional offsets are pending (unstable to a
// RequireStable fetch) until their marker; a COMMIT applies them, an ABORT
// drops them, live and when the partition is loaded again, where an open
// transaction's offsets stay pending until its marker arrives; an older
// producer epoch is fenced by the partition's producer state.
func TestTxnOffsets(t *testing.T) {
	rep := openOffsetsReplica(t, t.TempDir())
	t.Cleanup(func() { rep.Close() })
	c := newTestCoordinator(t, rep, 0)
	commitOne(t, c, "g", "t", 1, 3)
	for _, tc := range []struct {
		pid    int64
		p      int32
		offset int64
	}{{5, 0, 10}, {6, 1, 20}, {7, 2, 30}} {
		if code := txnCommitOne(t, c, "g", tc.pid, 0, "t", tc.p, tc.offset); code != 0 {
			t.Fatalf("TxnOffsetCommit producer %d: %v", tc.pid, kerr.ErrorForCode(code))
		}
	}
	if got := fetchOne(t, c, "g", "t", 0); got != -1 {
		t.Fatalf("t-0 pending: fetched %d, want -1", got)
	}
	if _, code := fetchStable(t, c, "g", "t", 0); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("t-0 pending, RequireStable: %v, want UNSTABLE_OFFSET_COMMIT", kerr.ErrorForCode(code))
	}
	marker(t, c, rep, 5, 0, true)
	marker(t, c, rep, 6, 0, false)
	if got, code := fetchStable(t, c, "g", "t", 0); got != 10 || code != 0 {
		t.Fatalf("t-0 after COMMIT: %d %v, want 10", got, kerr.ErrorForCode(code))
	}
	if got, code := fetchStable(t, c, "g", "t", 1); got != 3 || code != 0 {
		t.Fatalf("t-1 after ABORT: %d %v, want the earlier 3", got, kerr.ErrorForCode(code))
	}
	if code := txnCommitOne(t, c, "g", 8, 2, "t", 3, 40); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := txnCommitOne(t, c, "g", 8, 1, "t", 3, 41); code != kerr.ProducerFenced.Code {
		t.Fatalf("an older epoch: %v, want PRODUCER_FENCED", kerr.ErrorForCode(code))
	}
	c.Close()

	// Loaded again: 5 committed, 6 aborted, 7 and 8 still open.
	c2 := newTestCoordinator(t, rep, 0)
	if got := fetchOne(t, c2, "g", "t", 0); got != 10 {
		t.Fatalf("loaded t-0: %d, want 10", got)
	}
	if got := fetchOne(t, c2, "g", "t", 1); got != 3 {
		t.Fatalf("loaded t-1: %d, want 3", got)
	}
	if _, code := fetchStable(t, c2, "g", "t", 2); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("loaded t-2, open: %v, want UNSTABLE_OFFSET_COMMIT", kerr.ErrorForCode(code))
	}
	marker(t, c2, rep, 7, 0, true)
	marker(t, c2, rep, 8, 2, false)
	if got, code := fetchStable(t, c2, "g", "t", 2); got != 30 || code != 0 {
		t.Fatalf("t-2 after its COMMIT on the new coordinator: %d %v", got, kerr.ErrorForCode(code))
	}
	if got, code := fetchStable(t, c2, "g", "t", 3); got != -1 || code != 0 {
		t.Fatalf("t-3 after its ABORT: %d %v", got, kerr.ErrorForCode(code))
	}
}
