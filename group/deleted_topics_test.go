package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/segment/batch"
)

// fetchByName is OffsetFetch v9 (by name) of partition p of topic in grp.
func fetchByName(t *testing.T, c *Coordinator, grp, topic string, p int32) int64 {
	t.Helper()
	req := offsetFetchOne(9, grp, topic, p)
	// A group left with nothing ends: a fetch that found it just before
	// answers NOT_COORDINATOR, and the client asks again.
	var resp *kmsg.OffsetFetchResponse
	if err := proctest.Poll(10*time.Second, 10*time.Millisecond, func() bool {
		resp = serve(t, c.handleOffsetFetch, req, func(r *kmsg.OffsetFetchResponse) int16 { return r.Groups[0].ErrorCode })
		return resp.Groups[0].ErrorCode != kerr.NotCoordinator.Code
	}); err != nil || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("OffsetFetch of %s: %v %v", grp, kerr.ErrorForCode(resp.Groups[0].ErrorCode), err)
	}
	return resp.Groups[0].Topics[0].Partitions[0].Offset
}

// TestOffsetsOfADeletedTopic: an offset is kept with the id of the topic
// it was committed for (OffsetCommitValue v4, KAFKA-19141) and answered
// only while the topic of its name has that id: OffsetFetch by name and by
// id answer -1 once the name is another topic's. A partition loaded after
// the topic was deleted writes tombstones for the offsets of ids the
// cluster no longer has, before it serves a request, and keeps an offset
// written without an id (an older Shale's, replayed as it was). When the
// node learns of the deletion (TopicDeleted), the offsets of that id, and
// those without an id under its name, are deleted; other topics' stay.
func TestOffsetsOfADeletedTopic(t *testing.T) {
	rep := openOffsetsReplica(t, t.TempDir())
	t.Cleanup(func() { rep.Close() })
	orders := []TopicMeta{{Name: "orders", ID: idOrders, Partitions: 2}, {Name: "refunds", ID: idRefunds, Partitions: 2}}
	c := New(Config{Partitions: 1, MinSessionTimeout: time.Second, Logger: quietLogger()}, oneReplica{rep}, &topicsCluster{topics: orders})
	t.Cleanup(c.Close)
	if r := commitV10(t, c, "", "g", 42, idOrders, idRefunds); r.Topics[0].Partitions[0].ErrorCode != 0 || r.Topics[1].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %+v", r.Topics)
	}
	if got := fetchByName(t, c, "g", "orders", 0); got != 42 {
		t.Fatalf("orders-0 by name: %d, want 42", got)
	}
	c.Close()

	// The record carries the id, and an older Shale's record (v3, no id)
	// of orders-1 is appended as an upgrade would find it.
	groups, _, err := readPartition(rep)
	if err != nil || groups["g"].offsets[topicPartition{"orders", 0}].topicID != idOrders {
		t.Fatalf("loaded %+v %v: want orders-0 with its id", groups["g"], err)
	}
	v3 := kmsg.NewOffsetCommitValue()
	v3.Version, v3.Offset, v3.LeaderEpoch = 3, 7, -1
	b, err := batch.Build(nil, batch.NoProducer(), []batch.Record{{Key: offsetKey("g", topicPartition{"orders", 1}), Value: v3.AppendTo(nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rep.AppendLeader(b); err != nil {
		t.Fatal(err)
	}

	// orders is deleted and created again (a new id) while no coordinator
	// has the partition loaded.
	reborn := []TopicMeta{{Name: "orders", ID: idNobody, Partitions: 2}, {Name: "refunds", ID: idRefunds, Partitions: 2}}
	c2 := New(Config{Partitions: 1, MinSessionTimeout: time.Second, Logger: quietLogger()}, oneReplica{rep}, &topicsCluster{topics: reborn})
	t.Cleanup(c2.Close)
	if got := fetchByName(t, c2, "g", "orders", 0); got != -1 {
		t.Fatalf("orders-0 by name after the topic was created again: %d, want -1", got)
	}
	if g := fetchByID(t, c2, "", "g", idNobody, idRefunds); g.ErrorCode != 0 || len(g.Topics) != 2 ||
		g.Topics[0].Partitions[0].Offset != -1 || g.Topics[0].Partitions[0].ErrorCode != 0 || g.Topics[1].Partitions[0].Offset != 42 {
		t.Fatalf("by id after the topic was created again: %+v, want orders-0 -1 and refunds-0 42", g)
	}
	if got := fetchByName(t, c2, "g", "orders", 1); got != 7 {
		t.Fatalf("orders-1, written without an id: %d, want 7", got)
	}
	// The load wrote orders-0's tombstone.
	if err := proctest.Poll(10*time.Second, 10*time.Millisecond, func() bool {
		groups, _, err := readPartition(rep)
		_, kept := groups["g"].offsets[topicPartition{"orders", 0}]
		return err == nil && !kept
	}); err != nil {
		t.Fatalf("no tombstone for the deleted topic's offset: %v", err)
	}

	// The new orders is deleted: its offsets (none with its id) and those
	// without an id under its name go; refunds' stay.
	c2.TopicDeleted("orders", idNobody)
	if err := proctest.Poll(10*time.Second, 10*time.Millisecond, func() bool { return fetchByName(t, c2, "g", "orders", 1) == -1 }); err != nil {
		t.Fatalf("orders-1 (no id) kept after its topic was deleted: %v", err)
	}
	if got := fetchByName(t, c2, "g", "refunds", 0); got != 42 {
		t.Fatalf("refunds-0: %d, want 42", got)
	}
	groups, _, err = readPartition(rep)
	if err != nil || len(groups["g"].offsets) != 1 {
		t.Fatalf("after the deletion the log holds %+v (%v), want refunds-0 alone", groups["g"].offsets, err)
	}
}

// TestDeletedTopicDropsPendingTxnOffsets: a deleted topic's transactional
// offsets still waiting for their marker are dropped with its committed
// ones, so a COMMIT marker after the deletion brings nothing back, live
// or at the next load (a tombstone drops a partition's pending offsets in
// Kafka's replay too; before, the load applied them).
func TestDeletedTopicDropsPendingTxnOffsets(t *testing.T) {
	rep := openOffsetsReplica(t, t.TempDir())
	t.Cleanup(func() { rep.Close() })
	cl := &topicsCluster{topics: []TopicMeta{{Name: "orders", ID: idOrders, Partitions: 2}}}
	c := New(Config{Partitions: 1, MinSessionTimeout: time.Second, Logger: quietLogger()}, oneReplica{rep}, cl)
	t.Cleanup(c.Close)
	commitV10(t, c, "", "g", 5, idOrders)
	if code := txnCommitOne(t, c, "g", 9, 0, "orders", 0, 8); code != 0 {
		t.Fatalf("TxnOffsetCommit: %v", kerr.ErrorForCode(code))
	}
	c.TopicDeleted("orders", idOrders)
	// The group, left with nothing, ends: a fetch that found it before
	// may answer NOT_COORDINATOR (the client asks again), the next one
	// finds no group.
	stable := func() bool {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.RequireStable = 8, true
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = "g"
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = "orders", []int32{0}
		rg.Topics = append(rg.Topics, rt)
		req.Groups = append(req.Groups, rg)
		g := serve(t, c.handleOffsetFetch, req, func(r *kmsg.OffsetFetchResponse) int16 { return r.Groups[0].ErrorCode }).Groups[0]
		return g.ErrorCode == 0 && g.Topics[0].Partitions[0].ErrorCode == 0
	}
	if err := proctest.Poll(10*time.Second, 10*time.Millisecond, stable); err != nil {
		t.Fatalf("orders-0 still pending after its topic was deleted: %v", err)
	}
	marker(t, c, rep, 9, 0, true)
	if got := fetchByName(t, c, "g", "orders", 0); got != -1 {
		t.Fatalf("orders-0 after the transaction committed: %d, want -1", got)
	}
	c.Close()
	c2 := New(Config{Partitions: 1, MinSessionTimeout: time.Second, Logger: quietLogger()}, oneReplica{rep}, cl)
	t.Cleanup(c2.Close)
	if got := fetchByName(t, c2, "g", "orders", 0); got != -1 {
		t.Fatalf("orders-0 loaded again: %d, want -1", got)
	}
}

// TestCommitOfATopicTheClusterDoesNotHave: OffsetCommit and
// TxnOffsetCommit by name of a topic the cluster does not have (a
// consumer still committing a topic just deleted), or of a partition its
// topic does not have, are UNKNOWN_TOPIC_OR_PARTITION and commit nothing,
// as Kafka answers them; the other partitions of the request are
// committed.
func TestCommitOfATopicTheClusterDoesNotHave(t *testing.T) {
	c := newByIDCoordinator(t, nil)
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 9, "g", -1
	for _, tp := range []topicPartition{{"orders", 0}, {"orders", 2}, {"gone", 0}} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = tp.topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = tp.partition, 11
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp := serve(t, c.handleOffsetCommit, req, func(r *kmsg.OffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
	for i, want := range []int16{0, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code} {
		if got := resp.Topics[i].Partitions[0].ErrorCode; got != want {
			t.Fatalf("commit of %s-%d: %v, want %v", resp.Topics[i].Topic, resp.Topics[i].Partitions[0].Partition, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
		}
	}
	if got := fetchByName(t, c, "g", "orders", 0); got != 11 {
		t.Fatalf("orders-0: %d, want 11", got)
	}
	if got := fetchByName(t, c, "g", "gone", 0); got != -1 {
		t.Fatalf("gone-0: %d, want -1 (not committed)", got)
	}
	if code := txnCommitOne(t, c, "g", 9, 0, "gone", 0, 8); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("TxnOffsetCommit of gone-0: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(code))
	}
	if _, code := fetchStable(t, c, "g", "gone", 0); code != 0 {
		t.Fatalf("gone-0 after the refused TxnOffsetCommit: %v, want nothing pending", kerr.ErrorForCode(code))
	}
}
