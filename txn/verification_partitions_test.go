package txn_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/txn"
)

// TestTxnVerificationUsesTheCoordinatorsPartitionCount: a partition
// leader's KIP-890 check of a transaction goes to the leader of the id's
// __transaction_state partition as the transaction coordinator maps it
// (transaction.state.log.num.partitions), whatever partition count the
// topic has. Here the topic has 60 partitions (CreatePartitions accepted
// it before issue 22; it is POLICY_VIOLATION now) while the coordinators
// map ids to 50. Before the fix the leader mapped the id with the topic's
// 60 and asked a broker that is not its coordinator, which answered
// NOT_COORDINATOR on every retry: the transactional produce failed at its
// delivery timeout (the test failed on ProduceSync).
func TestTxnVerificationUsesTheCoordinatorsPartitionCount(t *testing.T) {
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 3, testnode.WithSession(2*time.Second))
	ctx := proctest.Context(t, 120*time.Second)
	seeds, adm := testnode.SeededAdmin(t, ctx, nodes)
	if _, err := adm.CreateTopic(ctx, -1, -1, nil, txn.StateTopic); err != nil {
		t.Fatal(err)
	}
	if cr, err := adm.CreatePartitions(ctx, 10, txn.StateTopic); err == nil && cr[txn.StateTopic].Err == nil {
		t.Fatalf("CreatePartitions of %s accepted", txn.StateTopic)
	} else if err == nil && !errors.Is(cr[txn.StateTopic].Err, kerr.PolicyViolation) {
		t.Fatalf("CreatePartitions of %s: %v, want POLICY_VIOLATION", txn.StateTopic, cr[txn.StateTopic].Err)
	}
	store := nodes[0].Store()
	if err := store.CreatePartitions(ctx, txn.StateTopic, 60); err != nil { // as an older Shale let a client do
		t.Fatal(err)
	}
	testnode.CreateTopic(t, adm, "shape-out", 1)
	leader := func(topic string, p int32) int32 {
		st, ok := store.Partition(topic, p)
		if !ok {
			return -1
		}
		return st.Leader
	}
	proctest.Eventually(t, 20*time.Second, "leaders of the 60 state partitions and shape-out", func() bool {
		for p := range int32(60) {
			if leader(txn.StateTopic, p) < 0 {
				return false
			}
		}
		return leader("shape-out", 0) >= 0
	})
	id := ""
	for i := 0; id == ""; i++ {
		c := fmt.Sprintf("shape-%d", i)
		if leader(txn.StateTopic, txn.PartitionFor(c, 50)) != leader(txn.StateTopic, txn.PartitionFor(c, 60)) {
			id = c
		}
	}
	cl := testnode.Client(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.TransactionalID(id),
		kgo.RecordDeliveryTimeout(15*time.Second), kgo.TransactionTimeout(60*time.Second))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "shape-out", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("transactional produce with %s (coordinator partition %d, %d by the topic's count): %v",
			id, txn.PartitionFor(id, 50), txn.PartitionFor(id, 60), err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
}
