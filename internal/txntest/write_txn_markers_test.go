package txntest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// writeMarker sends WriteTxnMarkers (abort) of topic-p for pid at epoch,
// with transactionVersion (sent from v2), over cl, and returns the answer's
// version and the partition's code.
func writeMarker(t *testing.T, ctx context.Context, cl *kgo.Client, pid int64, epoch int16, transactionVersion int8, topic string, p int32) (int16, int16) {
	t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, m.TransactionVersion = pid, epoch, false, 0, transactionVersion
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, []int32{p}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Markers) != 1 || len(resp.Markers[0].Topics) != 1 || len(resp.Markers[0].Topics[0].Partitions) != 1 {
		t.Fatalf("WriteTxnMarkers of %s-%d at epoch %d: %v %+v", topic, p, epoch, err, resp)
	}
	return resp.Version, resp.Markers[0].Topics[0].Partitions[0].ErrorCode
}

// TestWriteTxnMarkersV2: WriteTxnMarkers v2 carries each marker's
// transaction version (KIP-1228). A transactions v2 marker at the epoch of
// the producer's open transaction is INVALID_PRODUCER_EPOCH and ends
// nothing (its end bumps the epoch, so a marker at the old one is a stale
// coordinator's); above it, it ends the transaction, and its retry at that
// epoch is answered 0 (KAFKA-19999). A v1 marker (no version) at the
// producer's epoch ends the transaction, as before v2.
func TestWriteTxnMarkersV2(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	cl := testnode.Client(t, n.KafkaAddr(), kgo.MaxVersions(kversion.V3_9_0()))
	ctx := proctest.Context(t, 60*time.Second)
	createTopic(t, ctx, cl, "markers", 2, 1)
	const id = "markers-v2"
	pid, epoch := newProducer(t, ctx, cl, id)
	writeInTxn(t, ctx, cl, id, pid, epoch, "markers", 0, 1)

	v2 := testnode.Client(t, n.KafkaAddr())
	if v, code := writeMarker(t, ctx, v2, pid, epoch, 2, "markers", 0); v != 2 || code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("v%d transactions v2 marker at the open transaction's epoch: %v, want v2 INVALID_PRODUCER_EPOCH", v, kerr.ErrorForCode(code))
	}
	if ap := describeProducer(t, ctx, cl, "markers", 0, pid); ap == nil || ap.CurrentTxnStartOffset < 0 {
		t.Fatalf("markers-0 after the refused marker: %+v, want its transaction open", ap)
	}
	for range 2 { // the marker, then its retry
		if v, code := writeMarker(t, ctx, v2, pid, epoch+1, 2, "markers", 0); v != 2 || code != 0 {
			t.Fatalf("v%d transactions v2 marker at the bumped epoch: %v", v, kerr.ErrorForCode(code))
		}
	}
	if lso, end := lastStable(t, ctx, cl, "markers", 0), endOffset(t, ctx, cl, "markers", 0); lso != end {
		t.Fatalf("markers-0: last stable offset %d, log end %d", lso, end)
	}

	vs := kversion.V4_4_0()
	vs.SetMaxKeyVersion(int16(kmsg.WriteTxnMarkers), 1)
	v1 := testnode.Client(t, n.KafkaAddr(), kgo.MaxVersions(vs))
	if v, code := writeMarker(t, ctx, v1, pid, epoch, 2, "markers", 1); v != 1 || code != 0 {
		t.Fatalf("v%d marker at the producer's epoch: %v, want v1 taken", v, kerr.ErrorForCode(code))
	}
	if lso, end := lastStable(t, ctx, cl, "markers", 1), endOffset(t, ctx, cl, "markers", 1); lso != end {
		t.Fatalf("markers-1: last stable offset %d, log end %d", lso, end)
	}
}
