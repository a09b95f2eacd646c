package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz"
	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

// topicsCluster is fakeCluster with topics (TopicLister), as the node's
// metadata gives them to the coordinator.
type topicsCluster struct {
	fakeCluster
	topics []TopicMeta
}

func (c *topicsCluster) TopicsMeta() []TopicMeta { return c.topics }

var (
	idOrders  = [16]byte{1, 2, 3}
	idRefunds = [16]byte{4, 5, 6}
	idNobody  = [16]byte{0xde, 0xad}
)

// newByIDCoordinator is a coordinator of one offsets partition whose
// cluster has topics orders and refunds (2 partitions each), with az as
// its authorizer (nil: off).
func newByIDCoordinator(t *testing.T, az *authz.Authorizer) *Coordinator {
	t.Helper()
	rep := openOffsetsReplica(t, t.TempDir())
	t.Cleanup(func() { rep.Close() })
	cl := &topicsCluster{topics: []TopicMeta{{Name: "orders", ID: idOrders, Partitions: 2}, {Name: "refunds", ID: idRefunds, Partitions: 2}}}
	c := New(Config{Partitions: 1, MinSessionTimeout: time.Second, Logger: quietLogger(), Authorizer: az}, oneReplica{rep}, cl)
	t.Cleanup(c.Close)
	return c
}

// allowed is an operation on a resource, by its literal name.
type allowed struct {
	rt   acl.ResourceType
	name string
	op   acl.Operation
}

// allowing is an authorizer (User:admin a super user) that allows
// principal the operations of allows and nothing else.
func allowing(principal string, allows ...allowed) *authz.Authorizer {
	az := authz.New(authz.Config{SuperUsers: []string{"User:admin"}})
	var bs []acl.Binding
	for _, a := range allows {
		bs = append(bs, acl.Binding{ResourceType: a.rt, ResourceName: a.name, PatternType: acl.PatternLiteral,
			Principal: principal, Host: acl.WildcardHost, Operation: a.op, Permission: acl.Allow})
	}
	az.SetBindings(acl.NewSet(bs))
	return az
}

// serveAs is serve for a request of principal (its connection's).
func serveAs[R kmsg.Response](t *testing.T, principal string, h kafka.Handler, msg kmsg.Request, code func(R) int16) R {
	t.Helper()
	return serveConn(t, &kafka.ConnInfo{Principal: principal}, h, msg, code)
}

// serveConn sends msg to h on a connection conn (nil: none) until the
// answer's code is not COORDINATOR_LOAD_IN_PROGRESS, for at most 20 s.
func serveConn[R kmsg.Response](t *testing.T, conn *kafka.ConnInfo, h kafka.Handler, msg kmsg.Request, code func(R) int16) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		reply, err := h(ctx, &kafka.Request{Key: msg.Key(), Version: msg.GetVersion(), Msg: msg, Conn: conn})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := reply.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(R)
		if code(r) != kerr.CoordinatorLoadInProgress.Code {
			return r
		}
		if ctx.Err() != nil {
			t.Fatal("coordinator never loaded")
		}
	}
}

// commitV10 is a simple OffsetCommit v10 of partition 0 of each id at
// offset, as principal.
func commitV10(t *testing.T, c *Coordinator, principal, grp string, offset int64, ids ...[16]byte) *kmsg.OffsetCommitResponse {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 10, grp, -1
	for _, id := range ids {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, 3
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	return serveAs(t, principal, c.handleOffsetCommit, req, func(r *kmsg.OffsetCommitResponse) int16 {
		if len(r.Topics) == 0 {
			return 0
		}
		return r.Topics[0].Partitions[0].ErrorCode
	})
}

// fetchByID is OffsetFetch v10 of grp: partitions 0 and 1 of each id, or
// every committed offset with no ids, as principal.
func fetchByID(t *testing.T, c *Coordinator, principal, grp string, ids ...[16]byte) kmsg.OffsetFetchResponseGroup {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 10
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = grp
	for _, id := range ids {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.TopicID, rt.Partitions = id, []int32{0, 1}
		rg.Topics = append(rg.Topics, rt)
	}
	req.Groups = append(req.Groups, rg)
	resp := serveAs(t, principal, c.handleOffsetFetch, req, func(r *kmsg.OffsetFetchResponse) int16 { return r.Groups[0].ErrorCode })
	if len(resp.Groups) != 1 {
		t.Fatalf("OffsetFetch v10: %d groups", len(resp.Groups))
	}
	return resp.Groups[0]
}

// wireRoundTrip encodes resp at its version and decodes it again: what a
// client reads (v10 carries no topic names).
func wireRoundTrip[R kmsg.Response](t *testing.T, resp R, fresh R) R {
	t.Helper()
	fresh.SetVersion(resp.GetVersion())
	if err := fresh.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	return fresh
}

// TestOffsetCommitFetchV10: OffsetCommit and OffsetFetch v10 name topics by
// id. A commit by id is kept under the topic's name: v9 reads it by name,
// and a v9 commit is read by id at v10. An id no topic has is
// UNKNOWN_TOPIC_ID in both (not committed), a partition the topic does not
// have UNKNOWN_TOPIC_OR_PARTITION, and the answers name topics by id only.
func TestOffsetCommitFetchV10(t *testing.T) {
	c := newByIDCoordinator(t, nil)

	resp := wireRoundTrip(t, commitV10(t, c, "", "g", 42, idOrders, idNobody), kmsg.NewPtrOffsetCommitResponse())
	if len(resp.Topics) != 2 {
		t.Fatalf("commit v10 answer: %+v", resp.Topics)
	}
	if got := resp.Topics[0]; got.TopicID != idOrders || got.Topic != "" || got.Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit v10 of orders: %+v", got)
	}
	if got := resp.Topics[1]; got.TopicID != idNobody || got.Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("commit v10 of an unknown id: %+v, want UNKNOWN_TOPIC_ID", got)
	}
	// Only unknown ids: answered without the group (which need not exist).
	if got := commitV10(t, c, "", "nobody-group", 1, idNobody); got.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("commit v10 of an unknown id alone: %v", kerr.ErrorForCode(got.Topics[0].Partitions[0].ErrorCode))
	}

	// A partition the topic does not have: UNKNOWN_TOPIC_OR_PARTITION,
	// the others committed.
	badp := kmsg.NewPtrOffsetCommitRequest()
	badp.Version, badp.Group, badp.Generation = 10, "g", -1
	bt := kmsg.NewOffsetCommitRequestTopic()
	bt.TopicID = idOrders
	for _, p := range []int32{2, 1} {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, 13
		bt.Partitions = append(bt.Partitions, rp)
	}
	badp.Topics = append(badp.Topics, bt)
	br := serve(t, c.handleOffsetCommit, badp, func(r *kmsg.OffsetCommitResponse) int16 { return r.Topics[0].Partitions[1].ErrorCode })
	if ps := br.Topics[0].Partitions; ps[0].Partition != 2 || ps[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || ps[1].ErrorCode != 0 {
		t.Fatalf("commit v10 of orders-2 (no such partition) and orders-1: %+v", ps)
	}

	// v9 reads the v10 commit by name.
	v9 := kmsg.NewPtrOffsetFetchRequest()
	v9.Version = 9
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = "g"
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = "orders", []int32{0}
	rg.Topics = append(rg.Topics, rt)
	v9.Groups = append(v9.Groups, rg)
	r9 := serve(t, c.handleOffsetFetch, v9, func(r *kmsg.OffsetFetchResponse) int16 { return r.Groups[0].ErrorCode })
	if p := r9.Groups[0].Topics[0].Partitions[0]; r9.Groups[0].Topics[0].Topic != "orders" || p.Offset != 42 || p.LeaderEpoch != 3 {
		t.Fatalf("v9 fetch of the v10 commit: %+v", r9.Groups[0].Topics)
	}

	// v10 reads a v9 commit (by name) by id.
	commitOne(t, c, "g", "refunds", 1, 7)
	g := fetchByID(t, c, "", "g", idOrders, idRefunds, idNobody)
	raw := kmsg.NewPtrOffsetFetchResponse()
	raw.Groups = []kmsg.OffsetFetchResponseGroup{g}
	raw.Version = 10
	g = wireRoundTrip(t, raw, kmsg.NewPtrOffsetFetchResponse()).Groups[0]
	if g.ErrorCode != 0 || len(g.Topics) != 3 {
		t.Fatalf("v10 fetch: %+v", g)
	}
	want := []struct {
		id      [16]byte
		offsets [2]int64
		code    int16
	}{{idOrders, [2]int64{42, 13}, 0}, {idRefunds, [2]int64{-1, 7}, 0}, {idNobody, [2]int64{-1, -1}, kerr.UnknownTopicID.Code}}
	for i, w := range want {
		got := g.Topics[i]
		if got.TopicID != w.id || got.Topic != "" || len(got.Partitions) != 2 {
			t.Fatalf("v10 fetch topic %d: %+v, want id %x", i, got, w.id)
		}
		for pi, p := range got.Partitions {
			if p.Partition != int32(pi) || p.Offset != w.offsets[pi] || p.ErrorCode != w.code {
				t.Fatalf("v10 fetch of %x-%d: %+v, want offset %d code %v", w.id, pi, p, w.offsets[pi], kerr.ErrorForCode(w.code))
			}
		}
	}

	// Every committed offset, by id; a topic the cluster no longer has
	// cannot be named at v10 and is left out (v9 still answers it). The
	// offset is committed while the topic exists (a commit of a topic the
	// cluster does not have is UNKNOWN_TOPIC_OR_PARTITION), then the topic
	// goes.
	cl := c.cluster.(*topicsCluster)
	cl.topics = append(cl.topics, TopicMeta{Name: "deleted", ID: [16]byte{7}, Partitions: 1})
	commitOne(t, c, "g", "deleted", 0, 5)
	cl.topics = cl.topics[:len(cl.topics)-1]
	all := fetchByID(t, c, "", "g")
	if len(all.Topics) != 2 || all.Topics[0].TopicID != idOrders || all.Topics[1].TopicID != idRefunds ||
		all.Topics[0].Partitions[0].Offset != 42 || all.Topics[1].Partitions[0].Offset != 7 {
		t.Fatalf("v10 fetch of every offset: %+v", all.Topics)
	}
}

// TestOffsetsV10Authorized: with an authorizer, OffsetCommit v10 needs Read
// and OffsetFetch v10 Describe on the topic an id resolves to. A known id
// refused is TOPIC_AUTHORIZATION_FAILED, an unknown id UNKNOWN_TOPIC_ID
// (Kafka decides the id first), and the refused topics are neither
// committed nor, asked for every offset, answered.
func TestOffsetsV10Authorized(t *testing.T) {
	const alice = "User:alice"
	az := allowing(alice,
		allowed{acl.ResourceGroup, "g", acl.OpRead},
		allowed{acl.ResourceTopic, "orders", acl.OpRead}, // Read implies Describe
	)
	c := newByIDCoordinator(t, az)

	resp := commitV10(t, c, alice, "g", 9, idOrders, idRefunds, idNobody)
	codes := []int16{0, kerr.TopicAuthorizationFailed.Code, kerr.UnknownTopicID.Code}
	for i, code := range codes {
		if got := resp.Topics[i]; got.Partitions[0].ErrorCode != code {
			t.Fatalf("commit v10 topic %d (%x): %v, want %v", i, got.TopicID, kerr.ErrorForCode(got.Partitions[0].ErrorCode), kerr.ErrorForCode(code))
		}
	}
	// The admin commits refunds, which alice may not see.
	if r := commitV10(t, c, "User:admin", "g", 11, idRefunds); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("admin commit: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}

	g := fetchByID(t, c, alice, "g", idOrders, idRefunds, idNobody)
	if len(g.Topics) != 3 {
		t.Fatalf("v10 fetch as alice: %+v", g.Topics)
	}
	if p := g.Topics[0].Partitions[0]; g.Topics[0].TopicID != idOrders || p.Offset != 9 || p.ErrorCode != 0 {
		t.Fatalf("orders as alice: %+v", g.Topics[0])
	}
	if p := g.Topics[1].Partitions[0]; g.Topics[1].TopicID != idRefunds || p.Offset != -1 || p.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("refunds as alice: %+v, want TOPIC_AUTHORIZATION_FAILED", g.Topics[1])
	}
	if p := g.Topics[2].Partitions[0]; g.Topics[2].TopicID != idNobody || p.ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown id as alice: %+v, want UNKNOWN_TOPIC_ID", g.Topics[2])
	}
	if all := fetchByID(t, c, alice, "g"); len(all.Topics) != 1 || all.Topics[0].TopicID != idOrders {
		t.Fatalf("every offset as alice: %+v, want orders only", all.Topics)
	}
	if all := fetchByID(t, c, "User:admin", "g"); len(all.Topics) != 2 || all.Topics[1].Partitions[0].Offset != 11 {
		t.Fatalf("every offset as admin: %+v", all.Topics)
	}
	// No Read on the group: every partition GROUP_AUTHORIZATION_FAILED,
	// ids unresolved or not.
	if r := commitV10(t, c, "User:bob", "g", 1, idOrders, idNobody); r.Topics[0].Partitions[0].ErrorCode != kerr.GroupAuthorizationFailed.Code ||
		r.Topics[1].Partitions[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("commit v10 without the group: %+v", r.Topics)
	}
}
