package txntest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// produceTxn sends one transactional batch of producer pid at epoch
// (sequence 0) to topic-p and returns the partition's error code.
func produceTxn(t *testing.T, ctx context.Context, cl *kgo.Client, id string, pid int64, epoch int16, topic string, p int32) int16 {
	t.Helper()
	return produceTxnSeq(t, ctx, cl, id, pid, epoch, 0, topic, p)
}

// produceTxnSeq is produceTxn with the batch's base sequence.
func produceTxnSeq(t *testing.T, ctx context.Context, cl *kgo.Client, id string, pid int64, epoch int16, seq int32, topic string, p int32) int16 {
	t.Helper()
	return produceRaw(t, ctx, cl, &id, true, pid, epoch, seq, topic, p)
}

// writeInTxn adds each partition of topic to id's transaction and produces
// one transactional batch to it (sequence 0), failing the test on any
// error.
func writeInTxn(t *testing.T, ctx context.Context, cl *kgo.Client, id string, pid int64, epoch int16, topic string, partitions ...int32) {
	t.Helper()
	for _, p := range partitions {
		if code := addPartitions(t, ctx, cl, id, pid, epoch, topic, p); code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
		if code := produceTxn(t, ctx, cl, id, pid, epoch, topic, p); code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
	}
}

// TestVerifyRefusesUnaddedPartition: KIP-890 part 1 on one node. A
// transactional batch for a partition its transaction does not include is
// refused (INVALID_TXN_STATE) and opens no transaction there; after
// AddPartitionsToTxn the same batch is appended. The client is held to
// Kafka 3.9's versions (Produce v11): transactions v1, where the leader
// only verifies (a Produce v12 adds the partition: TestCoordinatorStatesV2).
func TestVerifyRefusesUnaddedPartition(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	cl := testnode.Client(t, n.KafkaAddr(), kgo.MaxVersions(kversion.V3_9_0()))
	ctx := proctest.Context(t, 60*time.Second)
	createTopic(t, ctx, cl, "v", 2, 1)
	const id = "verify"
	pid, epoch := newProducer(t, ctx, cl, id)
	if code := addPartitions(t, ctx, cl, id, pid, epoch, "v", 0); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := produceTxn(t, ctx, cl, id, pid, epoch, "v", 1); code != kerr.InvalidTxnState.Code {
		t.Fatalf("a batch for a partition outside the transaction: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	if ap := describeProducer(t, ctx, cl, "v", 1, pid); ap != nil {
		t.Fatalf("the refused batch left producer state in v-1: %+v", ap)
	}
	if code := produceTxn(t, ctx, cl, id, pid, epoch, "v", 0); code != 0 {
		t.Fatalf("a batch for the added partition: %v", kerr.ErrorForCode(code))
	}
	if code := addPartitions(t, ctx, cl, id, pid, epoch, "v", 1); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := produceTxn(t, ctx, cl, id, pid, epoch, "v", 1); code != 0 {
		t.Fatalf("after AddPartitionsToTxn: %v", kerr.ErrorForCode(code))
	}
}
