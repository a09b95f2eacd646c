package coordinator_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/sdk"
)

// The coordinators load their partitions eagerly, when this node becomes
// their leader (issue 25), as Kafka's do: the first request of a group or
// transactional id nobody asked for before never answers
// COORDINATOR_LOAD_IN_PROGRESS on a warm node, and ListGroups after a
// restart lists every group without any group being described first.

// findCoordinator asks for key's coordinator until the node names itself
// (the first FindCoordinator creates the coordinator's topic).
func findCoordinator(t *testing.T, b *kgo.Broker, key string, keyType int8) {
	t.Helper()
	ctx := proctest.Context(t, 30*time.Second)
	for {
		// kgo sends the newest version both sides support (v4: keys in
		// a batch); the fields of the older ones are set too.
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorKeys, req.CoordinatorType = key, []string{key}, keyType
		resp, err := b.Request(ctx, req)
		if err == nil {
			fr := resp.(*kmsg.FindCoordinatorResponse)
			code := fr.ErrorCode
			if len(fr.Coordinators) == 1 {
				code = fr.Coordinators[0].ErrorCode
			}
			if code == 0 {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("find coordinator of %q: %v %+v", key, err, resp)
		}
		testnode.PollTick(ctx)
	}
}

// waitLeading polls Metadata until every partition of topic names a
// leader: the node leads the topic (a coordinator that loads lazily would
// now load each partition on its first request).
func waitLeading(t *testing.T, cl *kgo.Client, topic string) {
	t.Helper()
	ctx := proctest.Context(t, 30*time.Second)
	for {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0 && len(resp.Topics[0].Partitions) > 0 &&
			!slices.ContainsFunc(resp.Topics[0].Partitions, func(p kmsg.MetadataResponseTopicPartition) bool {
				return p.ErrorCode != 0 || p.Leader < 0
			}) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never led: %v %+v", topic, err, resp)
		}
		testnode.PollTick(ctx)
	}
}

// A node that leads __consumer_offsets answers the first OffsetFetch and
// the first JoinGroup of groups no one asked for before without
// COORDINATOR_LOAD_IN_PROGRESS. Before issue 25 each partition loaded on
// its first request, and most of these answered it.
func TestFirstGroupRequestOnWarmNodeIsNotLoading(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	cl := testnode.Client(t, n.KafkaAddr())
	b := testnode.OnlyBroker(t, cl)
	findCoordinator(t, b, "warm-up", 0)
	waitLeading(t, cl, "__consumer_offsets")
	// Warm: ListGroups answers (it answers COORDINATOR_LOAD_IN_PROGRESS
	// while any partition this node leads is loading).
	testnode.ListGroupsLoaded(t, b)

	ctx := proctest.Context(t, 30*time.Second)
	loading := 0
	for i := range 30 {
		// kgo sends the newest version (v8: groups in a batch); the
		// fields of the older ones are set too.
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = fmt.Sprintf("fresh-fetch-%d", i)
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = req.Group
		req.Groups = append(req.Groups, rg)
		r, err := b.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		resp := r.(*kmsg.OffsetFetchResponse)
		code := resp.ErrorCode
		if len(resp.Groups) == 1 {
			code = resp.Groups[0].ErrorCode
		}
		switch code {
		case 0:
		case kerr.CoordinatorLoadInProgress.Code:
			loading++
		default:
			t.Fatalf("offset fetch of %s: %v", req.Group, kerr.ErrorForCode(code))
		}
	}
	for i := range 30 {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.ProtocolType = fmt.Sprintf("fresh-join-%d", i), "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
		r, err := b.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		resp := r.(*kmsg.JoinGroupResponse)
		switch resp.ErrorCode {
		case kerr.MemberIDRequired.Code: // the first join of a new member (KIP-394)
		case kerr.CoordinatorLoadInProgress.Code:
			loading++
		default:
			t.Fatalf("join of %s: %v", req.Group, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	if loading > 0 {
		t.Fatalf("%d of 60 first requests of new groups answered COORDINATOR_LOAD_IN_PROGRESS on a warm node", loading)
	}
}

// After a restart, ListGroups lists every group that committed offsets
// before it, with no DescribeGroups first; while the offsets partitions
// load it answers COORDINATOR_LOAD_IN_PROGRESS, never a partial list.
// Before issue 25 it answered an empty list.
func TestListGroupsAfterRestart(t *testing.T) {
	dir := t.TempDir()
	n := testnode.Start(t, dir)
	adm := kadm.NewClient(testnode.Client(t, n.KafkaAddr()))
	testnode.CreateTopic(t, adm, "lg", 1)
	var want []string
	for i := range 12 {
		grp := fmt.Sprintf("listed-%02d", i)
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: "lg", Partition: 0, At: int64(i), LeaderEpoch: -1})
		testnode.CommitSimple(t, adm, grp, os)
		want = append(want, grp)
	}
	adm.Close()
	cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Close(cctx); err != nil {
		t.Fatal(err)
	}

	n2 := testnode.Start(t, dir)
	got := testnode.ListGroupsLoaded(t, testnode.OnlyBroker(t, testnode.Client(t, n2.KafkaAddr())))
	if !slices.Equal(got, want) {
		t.Fatalf("ListGroups after restart: %v, want %v", got, want)
	}

	// `shale group list` (the SDK's ListGroups, one call) right after
	// another restart: the client retries COORDINATOR_LOAD_IN_PROGRESS
	// and gets every group.
	if err := n2.Close(cctx); err != nil {
		t.Fatal(err)
	}
	n3 := testnode.Start(t, dir)
	sa, err := sdk.NewAdmin(sdk.WithSeeds(n3.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Close()
	got, err = sa.ListGroups(proctest.Context(t, 30*time.Second))
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("the SDK's ListGroups after restart: %v %v, want %v", got, err, want)
	}
}

// A node that leads __transaction_state answers the first InitProducerId
// of transactional ids no one used before without
// COORDINATOR_LOAD_IN_PROGRESS. Before issue 25 each state partition
// loaded on its first request.
func TestFirstInitProducerIDOnWarmNodeIsNotLoading(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	cl := testnode.Client(t, n.KafkaAddr())
	b := testnode.OnlyBroker(t, cl)
	findCoordinator(t, b, "warm-up", 1)
	waitLeading(t, cl, "__transaction_state")
	// Warm: ListTransactions answers (COORDINATOR_LOAD_IN_PROGRESS while
	// a state partition this node leads loads, as Kafka's).
	ctx := proctest.Context(t, 30*time.Second)
	for {
		req := kmsg.NewPtrListTransactionsRequest()
		r, err := b.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		code := r.(*kmsg.ListTransactionsResponse).ErrorCode
		if code == 0 {
			break
		}
		if code != kerr.CoordinatorLoadInProgress.Code || ctx.Err() != nil {
			t.Fatalf("list transactions: %v", kerr.ErrorForCode(code))
		}
		testnode.PollTick(ctx)
	}
	loading := 0
	for i := range 30 {
		req := kmsg.NewPtrInitProducerIDRequest()
		id := fmt.Sprintf("fresh-txn-%d", i)
		req.TransactionalID, req.TransactionTimeoutMillis = &id, 60000
		req.ProducerID, req.ProducerEpoch = -1, -1
		r, err := b.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		switch code := r.(*kmsg.InitProducerIDResponse).ErrorCode; code {
		case 0:
		case kerr.CoordinatorLoadInProgress.Code:
			loading++
		default:
			t.Fatalf("init producer id of %s: %v", id, kerr.ErrorForCode(code))
		}
	}
	if loading > 0 {
		t.Fatalf("%d of 30 first InitProducerId answered COORDINATOR_LOAD_IN_PROGRESS on a warm node", loading)
	}
}
