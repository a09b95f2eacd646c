package txntest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/txn"
)

// TestVerifyAfterTheCoordinatorMoves is the chaos suite's transactions
// schedule, seed 203 at 9e940fa (STUCK): the partition leaders check each
// transaction's first batch with the coordinator (KIP-890), and once a
// preferred election moved the id's __transaction_state partition to
// another node, every check still went to the old coordinator, which
// answers NOT_COORDINATOR per partition, and the producer's batches got
// NOT_ENOUGH_REPLICAS until they timed out. Three processes: a transaction
// commits, the coordinator moves while the old one stays up, and the next
// transaction to the same partitions must commit.
func TestVerifyAfterTheCoordinatorMoves(t *testing.T) {
	nodes := startProcesses(t)
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.Kafka())
	}
	ctx := proctest.Context(t, 3*time.Minute)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const topic, parts = "verify-move", 3
	createTopicConfigs(t, ctx, cl, topic, parts, 3, map[string]string{"min.insync.replicas": "2"})

	const id = "verify-move-txn"
	pr, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID(id),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(20*time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	transact := func(round int) error {
		if err := pr.BeginTransaction(); err != nil {
			return err
		}
		for p := range int32(parts) {
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := pr.ProduceSync(rctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("round-%d-%d", round, p))}).FirstErr()
			cancel()
			if err != nil {
				pr.EndTransaction(ctx, kgo.TryAbort)
				return fmt.Errorf("produce to %s-%d: %w", topic, p, err)
			}
		}
		return pr.EndTransaction(ctx, kgo.TryCommit)
	}
	if err := transact(1); err != nil {
		t.Fatalf("first transaction: %v", err)
	}

	// Move the id's coordinator: the same replicas, another first, then
	// a preferred election. The old coordinator stays up.
	sp := txn.PartitionFor(id, 50)
	old, err := leaderOf(ctx, cl, txn.StateTopic, sp)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(txn.StateTopic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var replicas []int32
	for _, mp := range resp.Topics[0].Partitions {
		if mp.Partition == sp {
			replicas = mp.Replicas
		}
	}
	if len(replicas) < 2 {
		t.Fatalf("%s-%d has replicas %v; want at least 2", txn.StateTopic, sp, replicas)
	}
	i := slices.IndexFunc(replicas, func(r int32) bool { return r != old })
	target := replicas[i]
	order := append([]int32{target}, slices.DeleteFunc(slices.Clone(replicas), func(r int32) bool { return r == target })...)
	var ar kadm.AlterPartitionAssignmentsReq
	ar.Assign(txn.StateTopic, sp, order)
	if _, err := adm.AlterPartitionAssignments(ctx, ar); err != nil {
		t.Fatal(err)
	}
	set := kadm.TopicsSet{}
	set.Add(txn.StateTopic, sp)
	if err := pollFor(60*time.Second, func() bool {
		adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
		l, err := leaderOf(ctx, cl, txn.StateTopic, sp)
		return err == nil && l == target
	}); err != nil {
		t.Fatalf("%s-%d did not move from node %d to node %d", txn.StateTopic, sp, old, target)
	}
	t.Logf("coordinator of %s moved from node %d to node %d", id, old, target)

	if err := transact(2); err != nil {
		t.Fatalf("transaction after the coordinator moved: %v", err)
	}
	got := consumeAll(t, ctx, seeds[0], topic, kgo.ReadCommitted(), 2*parts)
	if len(got) != 2*parts {
		t.Fatalf("read_committed: %v, want %d records", got, 2*parts)
	}
}
