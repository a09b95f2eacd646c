package group

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
)

// TestCommitRefusalsLineUp: OffsetCommit and TxnOffsetCommit refuse the
// partitions of a topic denied, of an unknown id or not in the cluster,
// each with its code, and answer each partition committed with the
// group's code for it: the codes line up with the partitions when refused
// partitions stand between committed ones (a metadata over the limit is
// the one committed code that is not 0).
func TestCommitRefusalsLineUp(t *testing.T) {
	const alice = "User:alice"
	c := newByIDCoordinator(t, allowing(alice,
		allowed{acl.ResourceGroup, "g", acl.OpRead},
		allowed{acl.ResourceTopic, "orders", acl.OpRead},
		allowed{acl.ResourceTransactionalID, "tx", acl.OpWrite},
	))
	large := strings.Repeat("m", 4097) // over the default 4096 bytes
	type part struct {
		topic    string
		id       [16]byte
		p        int32
		metadata *string
		want     int16
	}
	parts := []part{
		{topic: "refunds", id: idRefunds, want: kerr.TopicAuthorizationFailed.Code},
		{topic: "orders", id: idOrders, metadata: &large, want: kerr.OffsetMetadataTooLarge.Code},
		{topic: "nobody", id: idNobody, want: kerr.UnknownTopicID.Code},
		{topic: "orders", id: idOrders, p: 5, want: kerr.UnknownTopicOrPartition.Code},
		{topic: "orders", id: idOrders, p: 1, want: 0},
	}
	check := func(api string, got func(i int) int16) {
		t.Helper()
		for i, p := range parts {
			want := p.want
			if want == kerr.UnknownTopicID.Code && api == "TxnOffsetCommit v4" {
				want = kerr.TopicAuthorizationFailed.Code // by name: a topic alice may not read
			}
			if code := got(i); code != want {
				t.Fatalf("%s of %s-%d: %v, want %v", api, p.topic, p.p, kerr.ErrorForCode(code), kerr.ErrorForCode(want))
			}
		}
	}

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version, oc.Group, oc.Generation = 10, "g", -1
	for _, p := range parts {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.TopicID = p.id
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.Metadata = p.p, 9, p.metadata
		rt.Partitions = append(rt.Partitions, rp)
		oc.Topics = append(oc.Topics, rt)
	}
	ocResp := serveAs(t, alice, c.handleOffsetCommit, oc, func(r *kmsg.OffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
	check("OffsetCommit v10", func(i int) int16 { return ocResp.Topics[i].Partitions[0].ErrorCode })

	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.Version, tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch, tc.Generation = 4, "tx", "g", 9, 0, -1
	for _, p := range parts {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = p.topic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.Metadata = p.p, 10, p.metadata
		rt.Partitions = append(rt.Partitions, rp)
		tc.Topics = append(tc.Topics, rt)
	}
	tcResp := serveAs(t, alice, c.handleTxnOffsetCommit, tc, func(r *kmsg.TxnOffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
	check("TxnOffsetCommit v4", func(i int) int16 { return tcResp.Topics[i].Partitions[0].ErrorCode })

	// Only orders-1 was committed: 9 by OffsetCommit, 10 pending in the
	// transaction.
	fetch := func(p int32, stable bool) (int64, int16) {
		t.Helper()
		req := offsetFetchOne(8, "g", "orders", p)
		req.RequireStable = stable
		resp := serveAs(t, "User:admin", c.handleOffsetFetch, req, func(r *kmsg.OffsetFetchResponse) int16 { return r.Groups[0].ErrorCode })
		op := resp.Groups[0].Topics[0].Partitions[0]
		return op.Offset, op.ErrorCode
	}
	if off, code := fetch(1, false); off != 9 || code != 0 {
		t.Fatalf("orders-1: offset %d %v, want 9", off, kerr.ErrorForCode(code))
	}
	if _, code := fetch(1, true); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("orders-1 stable: %v, want UNSTABLE_OFFSET_COMMIT", kerr.ErrorForCode(code))
	}
	if off, code := fetch(0, true); off != -1 || code != 0 {
		t.Fatalf("orders-0: offset %d %v, want nothing committed or pending", off, kerr.ErrorForCode(code))
	}
}
