package group_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

func TestGroupAdminAPIs(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	addr := n.KafkaAddr()
	adm := kadm.NewClient(testnode.Client(t, addr))
	testnode.CreateTopic(t, adm, "adm-a", 2)
	testnode.CreateTopic(t, adm, "adm-b", 1)
	testnode.ProduceN(t, addr, "adm-a", 20, "x")

	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "adm-a", Partition: 0, At: 3, LeaderEpoch: -1, Metadata: "m0"})
	os.Add(kadm.Offset{Topic: "adm-a", Partition: 1, At: 4, LeaderEpoch: -1})
	os.Add(kadm.Offset{Topic: "adm-b", Partition: 0, At: 5, LeaderEpoch: -1})
	testnode.CommitSimple(t, adm, "simple", os)
	got := testnode.Committed(t, adm, "simple")
	if o, _ := got.Lookup("adm-a", 0); o.At != 3 || o.Metadata != "m0" {
		t.Fatalf("fetched %+v", o)
	}

	ctx := proctest.Context(t, 60*time.Second)
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := listed["simple"]; !ok || l.State != "Empty" {
		t.Fatalf("ListGroups: %+v", listed)
	}

	// OffsetDelete on an empty group drops just the named partitions.
	del := kadm.TopicsSet{}
	del.Add("adm-b", 0)
	dres, err := adm.DeleteOffsets(ctx, "simple", del)
	if err != nil || dres.Error() != nil {
		t.Fatalf("DeleteOffsets: %v %v", err, dres.Error())
	}
	got = testnode.Committed(t, adm, "simple")
	if _, ok := got.Lookup("adm-b", 0); ok {
		t.Fatalf("adm-b still committed: %+v", got)
	}
	if o, ok := got.Lookup("adm-a", 1); !ok || o.At != 4 {
		t.Fatalf("adm-a-1 lost: %+v", got)
	}

	// An active consumer group: not deletable, its subscribed topics'
	// offsets neither.
	cl := testnode.Client(t, addr, kgo.ConsumerGroup("active"), kgo.ConsumeTopics("adm-a"),
		kgo.SessionTimeout(6*time.Second), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for range 3 {
		cl.PollFetches(proctest.Context(t, 2*time.Second))
	}
	testnode.WaitStable(t, adm, "active", 1)
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	dg, err := adm.DeleteGroup(ctx, "active")
	if !errors.Is(dg.Err, kerr.NonEmptyGroup) {
		t.Fatalf("DeleteGroup(active): %v %+v", err, dg)
	}
	del = kadm.TopicsSet{}
	del.Add("adm-a", 0)
	dres, err = adm.DeleteOffsets(ctx, "active", del)
	if err != nil {
		t.Fatal(err)
	}
	if pe := dres["adm-a"][0]; !errors.Is(pe, kerr.GroupSubscribedToTopic) {
		t.Fatalf("DeleteOffsets on a subscribed topic: %v", dres)
	}
	described, err := adm.DescribeGroups(ctx, "active", "nope")
	if err != nil {
		t.Fatal(err)
	}
	if d := described["active"]; d.State != "Stable" || d.ProtocolType != "consumer" || len(d.Members) != 1 {
		t.Fatalf("describe active: %+v", d)
	}
	// DescribeGroups v6 (KIP-1043, which kadm sends): an unknown group is
	// Dead with GROUP_ID_NOT_FOUND and a message naming it; v5 and below
	// answer Dead with no error (TestGroupErrorMessages in group/).
	if d := described["nope"]; d.State != "Dead" || !errors.Is(d.Err, kerr.GroupIDNotFound) || d.ErrMessage != "Group nope not found." {
		t.Fatalf("describe unknown: %+v", d)
	}

	// DeleteGroups on the empty group removes it and its offsets.
	dg, err = adm.DeleteGroup(ctx, "simple")
	if err != nil || dg.Err != nil {
		t.Fatalf("DeleteGroup(simple): %v %+v", err, dg)
	}
	if got := testnode.Committed(t, adm, "simple"); len(got) != 0 {
		t.Fatalf("offsets after delete: %+v", got)
	}
	dg, _ = adm.DeleteGroup(ctx, "simple")
	if !errors.Is(dg.Err, kerr.GroupIDNotFound) {
		t.Fatalf("second delete: %+v", dg)
	}
	listed, err = adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed["simple"]; ok {
		t.Fatalf("deleted group listed: %+v", listed)
	}

	// A KIP-848 group: its subscribed topic's offsets are refused while a
	// member subscribes to it, and can be deleted once its last member has
	// left (Kafka's isSubscribedToTopic reads the members' subscriptions).
	c848 := testnode.Client(t, addr, kgo.ConsumerGroup("active848"), kgo.ConsumeTopics("adm-a"), kgo.ServerSideBalancer(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	for range 3 {
		c848.PollFetches(proctest.Context(t, 2*time.Second))
	}
	wait848Stable(t, c848, "active848", 1)
	if err := c848.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := testnode.Committed(t, adm, "active848").Lookup("adm-a", 0); !ok {
		t.Fatal("active848 committed nothing on adm-a-0")
	}
	dres, err = adm.DeleteOffsets(ctx, "active848", del)
	if err != nil {
		t.Fatal(err)
	}
	if pe := dres["adm-a"][0]; !errors.Is(pe, kerr.GroupSubscribedToTopic) {
		t.Fatalf("DeleteOffsets on a KIP-848 group's subscribed topic: %v", dres)
	}
	c848.Close()
	desc848 := testnode.Client(t, addr)
	proctest.Eventually(t, 30*time.Second, "group active848 empty", func() bool {
		g, err := describe848(ctx, desc848, "active848")
		return err == nil && g.State == "Empty"
	})
	dres, err = adm.DeleteOffsets(ctx, "active848", del)
	if err != nil || dres.Error() != nil {
		t.Fatalf("DeleteOffsets on the emptied KIP-848 group: %v %v", err, dres)
	}
	if _, ok := testnode.Committed(t, adm, "active848").Lookup("adm-a", 0); ok {
		t.Fatal("adm-a-0 still committed in the emptied group")
	}
}

func TestGroupOffsetsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	n := testnode.Start(t, dir)
	addr := n.KafkaAddr()
	adm := kadm.NewClient(testnode.Client(t, addr))
	testnode.CreateTopic(t, adm, "rs", 3)
	ends := testnode.ProduceN(t, addr, "rs", 90, "v")

	// A consumer group commits everything, then closes (leaves).
	cl := testnode.Client(t, addr, kgo.ConsumerGroup("rg"), kgo.ConsumeTopics("rs"), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(6*time.Second), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := proctest.Context(t, 60*time.Second)
	seen := 0
	for seen < 90 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 90", seen)
		}
		seen += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	// Offsets overwritten many times: the last one wins after the restart.
	for i := range 20 {
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: "rs", Partition: 0, At: int64(i), LeaderEpoch: -1})
		testnode.CommitSimple(t, adm, "overwritten", os)
	}
	before := testnode.Committed(t, adm, "rg")
	for p, end := range ends {
		if o, _ := before.Lookup("rs", p); o.At != end {
			t.Fatalf("before restart: partition %d at %d, want %d", p, o.At, end)
		}
	}
	adm.Close()

	cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Close(cctx); err != nil {
		t.Fatal(err)
	}
	n2 := testnode.Start(t, dir)
	adm2 := kadm.NewClient(testnode.Client(t, n2.KafkaAddr()))
	after := testnode.Committed(t, adm2, "rg")
	for p, end := range ends {
		if o, ok := after.Lookup("rs", p); !ok || o.At != end {
			t.Errorf("after restart: partition %d at %+v, want %d", p, o, end)
		}
	}
	if o, _ := testnode.Committed(t, adm2, "overwritten").Lookup("rs", 0); o.At != 19 {
		t.Errorf("overwritten offset after restart: %d, want 19", o.At)
	}
	described, err := adm2.DescribeGroups(proctest.Context(t, 10*time.Second), "rg")
	if err != nil {
		t.Fatal(err)
	}
	if d := described["rg"]; d.State != "Empty" || d.ProtocolType != "consumer" {
		t.Errorf("rg after restart: %+v", d)
	}
}
