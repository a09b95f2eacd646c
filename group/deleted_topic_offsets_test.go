package group_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// recreateTopic deletes topic and creates it again under the same name
// (a new topic id), retrying while the deletion is still settling.
func recreateTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	ctx := proctest.Context(t, 30*time.Second)
	if resp, err := adm.DeleteTopic(ctx, topic); err != nil || resp.Err != nil {
		t.Fatalf("delete %s: %v %v", topic, err, resp.Err)
	}
	for {
		resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
		if err == nil && resp.Err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("create %s again: %v %v", topic, err, resp.Err)
		}
		testnode.PollTick(ctx)
	}
}

// TestDeletedTopicOffsetsAreDeleted: a group's committed offsets of a
// topic go with the topic, as Kafka's coordinator deletes them
// (onPartitionsDeleted). A group that consumed a topic which is deleted
// and created again under its name starts the new topic from its reset
// policy, not at the old topic's offset (before, the new consumer resumed
// at offset 3 of the new topic and skipped records 0-2), and OffsetFetch
// answers no offset by name (v9) and by id (v10).
func TestDeletedTopicOffsetsAreDeleted(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	addr := n.KafkaAddr()
	kcl := testnode.Client(t, addr)
	adm := kadm.NewClient(kcl)
	const topic, grp = "reborn", "reborn-g"
	testnode.CreateTopic(t, adm, topic, 1)
	testnode.ProduceN(t, addr, topic, 3, "old")

	old := testnode.Client(t, addr, kgo.ConsumerGroup(grp), kgo.ConsumeTopics(topic), kgo.SessionTimeout(6*time.Second),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	ctx := proctest.Context(t, 30*time.Second)
	for got := 0; got < 3; {
		fs := old.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 3 old records", got)
		}
		got += fs.NumRecords()
	}
	if err := old.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	old.Close() // leaves the group: it is empty, its offsets stay
	if o, ok := testnode.Committed(t, adm, grp).Lookup(topic, 0); !ok || o.At != 3 {
		t.Fatalf("commit of the old topic: %+v", o)
	}

	recreateTopic(t, adm, topic, 1)
	testnode.ProduceN(t, addr, topic, 10, "new")

	// By id (kadm sends OffsetFetch v10 to a node that has it) and by
	// name (a client capped at v9): no offset for the new topic.
	if o, ok := testnode.Committed(t, adm, grp).Lookup(topic, 0); ok {
		t.Fatalf("v10 fetch after the topic was created again: %+v, want no offset", o)
	}
	v9 := kversion.V4_4_0()
	v9.SetMaxKeyVersion(int16(kmsg.OffsetFetch), 9)
	adm9 := kadm.NewClient(testnode.Client(t, addr, kgo.MaxVersions(v9)))
	if o, ok := testnode.Committed(t, adm9, grp).Lookup(topic, 0); ok {
		t.Fatalf("v9 fetch after the topic was created again: %+v, want no offset", o)
	}
	// A raw v10 fetch by the new id: offset -1, no error.
	id := testnode.TopicID(t, testnode.Client(t, addr), topic) // a new client: kcl knew the old topic's id
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 10
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = grp
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.TopicID, rt.Partitions = id, []int32{0}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	raw, err := testnode.OnlyBroker(t, kcl).Request(proctest.Context(t, 20*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	resp := raw.(*kmsg.OffsetFetchResponse)
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) != 1 ||
		len(resp.Groups[0].Topics[0].Partitions) != 1 {
		t.Fatalf("raw OffsetFetch v10: %+v", resp)
	}
	if p := resp.Groups[0].Topics[0].Partitions[0]; p.Offset != -1 || p.ErrorCode != 0 {
		t.Fatalf("raw OffsetFetch v10 of the new id %x: offset %d, %v; want -1, no error", id, p.Offset, kerr.ErrorForCode(p.ErrorCode))
	}

	// A new member of the group starts at its reset policy: every record
	// of the new topic, from offset 0.
	cl := testnode.Client(t, addr, kgo.ConsumerGroup(grp), kgo.ConsumeTopics(topic), kgo.SessionTimeout(6*time.Second),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	ctx = proctest.Context(t, 30*time.Second)
	var offsets []int64
	for len(offsets) < 10 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed offsets %v of the new topic, want 0-9", offsets)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { offsets = append(offsets, r.Offset) })
		if len(offsets) > 0 && offsets[0] != 0 {
			t.Fatalf("the group resumed the new topic at offset %d (the old topic's commit), want 0", offsets[0])
		}
	}
}
