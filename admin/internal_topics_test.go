package admin_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/group"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/txn"
)

// TestMetadataAutoCreatesInternalTopicsWithTheirShape is issue 22 item 3's
// trigger: a client that names __consumer_offsets and __transaction_state
// in a Metadata request allowing auto-creation (a console consumer pointed
// at the offsets topic on a fresh cluster). Before the fix both were made
// with num.partitions (1) and delete retention, and the coordinators
// adopted them: FindCoordinator answered COORDINATOR_NOT_AVAILABLE for
// every group and transactional id not mapped to partition 0 (the test
// failed on "__consumer_offsets has 1 partitions, want 50"). Now they get
// their coordinators' shape and every key finds its coordinator.
func TestMetadataAutoCreatesInternalTopicsWithTheirShape(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	cl := testnode.Client(t, n.KafkaAddr())
	adm := kadm.NewClient(cl)
	ctx := proctest.Context(t, 60*time.Second)

	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	for _, name := range []string{group.OffsetsTopic, txn.StateTopic} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range resp.Topics {
		if mt.ErrorCode != 0 || !mt.IsInternal {
			t.Fatalf("metadata of %s: error %d internal %v", *mt.Topic, mt.ErrorCode, mt.IsInternal)
		}
	}
	testnode.InternalShape(ctx, t, adm, group.OffsetsTopic, 50, "")
	testnode.InternalShape(ctx, t, adm, txn.StateTopic, 50, "1") // min(transaction.state.log.min.isr 2, replication factor 1)

	// Every key finds its coordinator at once: one FindCoordinator per
	// type, straight to the node (no client retry), for keys on 20
	// different partitions.
	for keyType, partitionFor := range map[int8]func(string, int32) int32{0: group.PartitionFor, 1: txn.PartitionFor} {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorType = keyType
		seen := map[int32]bool{}
		for i := 0; len(seen) < 20; i++ {
			key := fmt.Sprintf("key-%d", i)
			if p := partitionFor(key, 50); !seen[p] {
				seen[p] = true
				fc.CoordinatorKeys = append(fc.CoordinatorKeys, key)
			}
		}
		fr, err := fc.RequestWith(ctx, cl.Broker(0))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range fr.Coordinators {
			if c.ErrorCode != 0 {
				t.Fatalf("FindCoordinator type %d key %s: %v %v", keyType, c.Key, kerr.ErrorForCode(c.ErrorCode), c.ErrorMessage)
			}
		}
	}
}

// TestCreateTopicsOfInternalTopics: CreateTopics makes __consumer_offsets
// and __transaction_state only with their coordinators' shape, filling -1
// in from it, and refuses another partition count or delete retention
// with POLICY_VIOLATION; AlterConfigs that would leave them without
// compaction is POLICY_VIOLATION too. Before the fix each was accepted
// (the test failed on the 1-partition __consumer_offsets being created).
func TestCreateTopicsOfInternalTopics(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	adm := kadm.NewClient(testnode.Client(t, n.KafkaAddr()))
	ctx := proctest.Context(t, 60*time.Second)

	policy := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, kerr.PolicyViolation) {
			t.Fatalf("%s: %v, want POLICY_VIOLATION", what, err)
		}
	}
	_, err := adm.CreateTopic(ctx, 1, 1, nil, group.OffsetsTopic)
	policy("__consumer_offsets with 1 partition", err)
	_, err = adm.CreateTopic(ctx, -1, -1, map[string]*string{"cleanup.policy": kmsg.StringPtr("delete")}, txn.StateTopic)
	policy("__transaction_state with cleanup.policy=delete", err)
	if td, err := adm.ListTopics(ctx); err != nil || len(td) != 0 {
		t.Fatalf("topics after refused creations: %v %v", td.Names(), err)
	}

	for _, name := range []string{group.OffsetsTopic, txn.StateTopic} {
		cr, err := adm.CreateTopic(ctx, -1, -1, nil, name)
		if err != nil || cr.Err != nil {
			t.Fatalf("create %s with -1: %v %v", name, err, cr.Err)
		}
		if cr.NumPartitions != 50 {
			t.Fatalf("create %s answered %d partitions, want 50", name, cr.NumPartitions)
		}
	}
	testnode.InternalShape(ctx, t, adm, group.OffsetsTopic, 50, "")
	testnode.InternalShape(ctx, t, adm, txn.StateTopic, 50, "1")

	// AlterConfigs: an incremental change of cleanup.policy, and a whole
	// set that leaves it out (the broker default, delete), are refused;
	// one that keeps compaction is not.
	ar, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: kmsg.StringPtr("delete")}}, group.OffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	policy("incremental cleanup.policy=delete", ar[0].Err)
	ar, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}, txn.StateTopic)
	if err != nil {
		t.Fatal(err)
	}
	policy("AlterConfigs without cleanup.policy", ar[0].Err)
	ar, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "segment.bytes", Value: kmsg.StringPtr("1048576")}}, group.OffsetsTopic)
	if err != nil || ar[0].Err != nil {
		t.Fatalf("incremental segment.bytes: %v %v", err, ar[0].Err)
	}
	testnode.InternalShape(ctx, t, adm, group.OffsetsTopic, 50, "")
	testnode.InternalShape(ctx, t, adm, txn.StateTopic, 50, "1")
}

// TestDeleteRecordsRefusedOnInternalTopics: DeleteRecords on
// __consumer_offsets or __transaction_state is INVALID_TOPIC_EXCEPTION, as
// Kafka's ReplicaManager answers, and a group's committed offsets stay.
// Before the fix it was accepted (the test failed on error 0 for
// __consumer_offsets), and the next coordinator of the partition loaded
// nothing.
func TestDeleteRecordsRefusedOnInternalTopics(t *testing.T) {
	const grp = "dr-internal"
	n := testnode.Start(t, t.TempDir())
	cl := testnode.Client(t, n.KafkaAddr())
	adm := kadm.NewClient(cl)
	ctx := proctest.Context(t, 60*time.Second)
	testnode.CreateTopic(t, adm, "dr-data", 1)
	testnode.ProduceN(t, n.KafkaAddr(), "dr-data", 10, "v")

	var os kadm.Offsets
	os.AddOffset("dr-data", 0, 7, -1)
	cr, err := adm.CommitOffsets(ctx, grp, os)
	if err != nil || cr.Error() != nil {
		t.Fatalf("commit: %v %v", err, cr.Error())
	}
	initTxn := kmsg.NewPtrInitProducerIDRequest()
	initTxn.TransactionalID = kmsg.StringPtr("dr-txn")
	initTxn.TransactionTimeoutMillis = 60000
	if ir, err := initTxn.RequestWith(ctx, cl); err != nil || ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %v", err, ir)
	}

	dr := kmsg.NewPtrDeleteRecordsRequest()
	dr.TimeoutMillis = 10000
	for name, p := range map[string]int32{group.OffsetsTopic: group.PartitionFor(grp, 50), txn.StateTopic: txn.PartitionFor("dr-txn", 50)} {
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = name
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = p, -1
		rt.Partitions = append(rt.Partitions, rp)
		dr.Topics = append(dr.Topics, rt)
	}
	resp, err := dr.RequestWith(ctx, cl.Broker(0))
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != kerr.InvalidTopicException.Code {
				t.Errorf("DeleteRecords %s-%d: %v, want INVALID_TOPIC_EXCEPTION", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	if o, _ := testnode.Committed(t, adm, grp).Lookup("dr-data", 0); o.At != 7 {
		t.Fatalf("committed offset %d after DeleteRecords, want 7", o.At)
	}
}

// TestMisshapenOffsetsTopicIsNamed: a __consumer_offsets made with one
// partition (as Metadata auto-creation did before issue 22) is not adopted
// silently: FindCoordinator for a group mapped past its partition answers
// COORDINATOR_NOT_AVAILABLE with a message naming the partition counts
// (before the fix only "__consumer_offsets-N has no leader") and the gauge
// shale_internal_topic_wrong_shape is 1 for it; deleting
// the topic, as the message's log line advises, lets the coordinator make
// it again with its own shape.
func TestMisshapenOffsetsTopicIsNamed(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	cl := testnode.Client(t, n.KafkaAddr())
	adm := kadm.NewClient(cl)
	ctx := proctest.Context(t, 60*time.Second)
	if _, err := n.Store().CreateTopic(ctx, group.OffsetsTopic, 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	grp := "misshapen-0"
	for i := 1; group.PartitionFor(grp, 50) == 0; i++ {
		grp = fmt.Sprintf("misshapen-%d", i)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{grp}
	resp, err := fc.RequestWith(ctx, cl.Broker(0))
	if err != nil || len(resp.Coordinators) != 1 {
		t.Fatalf("FindCoordinator: %v %v", err, resp)
	}
	fr, msg := resp.Coordinators[0], ""
	if fr.ErrorMessage != nil {
		msg = *fr.ErrorMessage
	}
	want := "__consumer_offsets has 1 partitions where the group coordinator (offsets.topic.num.partitions) maps keys to 50"
	if fr.ErrorCode != kerr.CoordinatorNotAvailable.Code || !strings.Contains(msg, want) {
		t.Fatalf("FindCoordinator: %v %q, want COORDINATOR_NOT_AVAILABLE naming %q", kerr.ErrorForCode(fr.ErrorCode), msg, want)
	}

	if v := testnode.MustMetric(t, testnode.Scrape(t, n), "shale_internal_topic_wrong_shape", "topic", group.OffsetsTopic); v != 1 {
		t.Fatalf("shale_internal_topic_wrong_shape{topic=%s} = %v, want 1", group.OffsetsTopic, v)
	}

	if _, err := adm.DeleteTopic(ctx, group.OffsetsTopic); err != nil {
		t.Fatalf("DeleteTopics %s: %v", group.OffsetsTopic, err)
	}
	var os kadm.Offsets
	testnode.CreateTopic(t, adm, "misshapen-data", 1)
	os.AddOffset("misshapen-data", 0, 0, -1)
	if cr, err := adm.CommitOffsets(ctx, grp, os); err != nil || cr.Error() != nil {
		t.Fatalf("commit after the topic was deleted: %v %v", err, cr.Error())
	}
	testnode.InternalShape(ctx, t, adm, group.OffsetsTopic, 50, "")
	if v := testnode.MustMetric(t, testnode.Scrape(t, n), "shale_internal_topic_wrong_shape", "topic", group.OffsetsTopic); v != 0 {
		t.Fatalf("shale_internal_topic_wrong_shape{topic=%s} = %v after the topic was made again, want 0", group.OffsetsTopic, v)
	}
}

// TestInternalTopicsFollowTheirPartitionSettings: with
// offsets_topic_num_partitions 7 and transaction_state_log_num_partitions
// 5, Metadata auto-creation makes the internal topics with those counts,
// and a group's commit and a transaction (AddOffsetsToTxn on a node where
// no group was used yet, then TxnOffsetCommit and EndTxn) work on them.
func TestInternalTopicsFollowTheirPartitionSettings(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) {
		c.OffsetsTopicNumPartitions, c.TransactionStateLogNumPartitions = 7, 5
	})
	cl := testnode.Client(t, n.KafkaAddr())
	adm := kadm.NewClient(cl)
	ctx := proctest.Context(t, 60*time.Second)
	testnode.CreateTopic(t, adm, "settings-data", 1)

	// A transaction sends offsets first, before any group was used.
	tcl := testnode.Client(t, n.KafkaAddr(), kgo.TransactionalID("settings-txn"), kgo.TransactionTimeout(60*time.Second))
	if err := tcl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tcl.ProduceSync(ctx, &kgo.Record{Topic: "settings-data", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	addOffsets := kmsg.NewPtrAddOffsetsToTxnRequest()
	addOffsets.TransactionalID, addOffsets.Group = "settings-txn", "settings-g"
	pid, epoch, err := tcl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	addOffsets.ProducerID, addOffsets.ProducerEpoch = pid, epoch
	if ar, err := addOffsets.RequestWith(ctx, cl); err != nil || ar.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %v %v", err, ar)
	}
	if err := tcl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	testnode.InternalShape(ctx, t, adm, group.OffsetsTopic, 7, "")
	testnode.InternalShape(ctx, t, adm, txn.StateTopic, 5, "1")

	var os kadm.Offsets
	os.AddOffset("settings-data", 0, 1, -1)
	if cr, err := adm.CommitOffsets(ctx, "settings-g2", os); err != nil || cr.Error() != nil {
		t.Fatalf("commit: %v %v", err, cr.Error())
	}
	if o, _ := testnode.Committed(t, adm, "settings-g2").Lookup("settings-data", 0); o.At != 1 {
		t.Fatalf("committed %d, want 1", o.At)
	}
}

// TestProduceToInternalTopicsRefused: a Produce to __consumer_offsets or
// __transaction_state from an ordinary client is INVALID_TOPIC_EXCEPTION,
// as Kafka's ReplicaManager answers ("Cannot append to internal topic"):
// a tombstone with a group's offset key would erase its committed offsets,
// and a made-up record would be replayed by the next coordinator. Only the
// client id Kafka reserves for its admin tools (__admin_client) may append.
// Before the fix the plain produce was acknowledged.
func TestProduceToInternalTopicsRefused(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	ctx := proctest.Context(t, 60*time.Second)
	// Make both topics exist, with their coordinators' shape.
	cl := testnode.Client(t, n.KafkaAddr())
	meta := kmsg.NewPtrMetadataRequest()
	meta.AllowAutoTopicCreation = true
	for _, name := range []string{group.OffsetsTopic, txn.StateTopic} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		meta.Topics = append(meta.Topics, rt)
	}
	if _, err := meta.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	produce := func(clientID, topic string) error {
		t.Helper()
		pc, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ClientID(clientID),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequestRetries(2),
			kgo.RecordRetries(20), kgo.RecordDeliveryTimeout(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		return pc.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Key: []byte("k"), Value: []byte("v")}).FirstErr()
	}
	for _, topic := range []string{group.OffsetsTopic, txn.StateTopic} {
		if err := produce("console-producer", topic); !errors.Is(err, kerr.InvalidTopicException) {
			t.Fatalf("produce to %s: %v, want INVALID_TOPIC_EXCEPTION", topic, err)
		}
	}
	// Kafka's admin client id may still write (its tools repair with it).
	if err := produce("__admin_client", group.OffsetsTopic); err != nil {
		t.Fatalf("produce to %s as __admin_client: %v", group.OffsetsTopic, err)
	}
}
