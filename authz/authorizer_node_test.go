package authz_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/segment/batch"
)

func oneBatch(t *testing.T, value string) []byte {
	t.Helper()
	b, err := batch.Build(nil, batch.NoProducer(), []batch.Record{{Value: []byte(value)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// authzFixture is what the table test's requests aim at: a topic with
// records, a group with a committed offset, a committed transaction, an
// ACL and a SCRAM credential, all made by the super user, none of which bob
// may see or change.
const (
	fxTopic = "secret"
	fxGroup = "secret-group"
	fxTxnID = "secret-txn"
)

type fxState struct {
	hw, logStart int64
	committed    int64
	partitions   int
	retention    string
	groups       int
	acls         int
	scramUsers   int
	topics       int
}

func writeFixture(t *testing.T, ctx context.Context, a *testnode.ACLNode) {
	t.Helper()
	adm := kadm.NewClient(a.Super)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, fxTopic); err != nil {
		t.Fatal(err)
	}
	txn, err := kgo.NewClient(kgo.SeedBrokers(a.N.KafkaAddr()), kgo.TransactionalID(fxTxnID), kgo.DefaultProduceTopic(fxTopic))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("secret-%d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: fxTopic, Partition: 0, At: 2, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, fxGroup, offs); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	a.AddACLs(t, ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("app-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead))
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carol-pass"}}); err != nil {
		t.Fatal(err)
	}
}

// fixtureState reads, as the super user, everything the table's requests must
// leave alone.
func fixtureState(t *testing.T, ctx context.Context, a *testnode.ACLNode) fxState {
	t.Helper()
	adm := kadm.NewClient(a.Super)
	var s fxState
	ends, err := adm.ListEndOffsets(ctx, fxTopic)
	if err != nil {
		t.Fatal(err)
	}
	starts, err := adm.ListStartOffsets(ctx, fxTopic)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := ends.Lookup(fxTopic, 0)
	st, _ := starts.Lookup(fxTopic, 0)
	s.hw, s.logStart = e.Offset, st.Offset
	fetched, err := adm.FetchOffsets(ctx, fxGroup)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup(fxTopic, 0); ok {
		s.committed = o.At
	}
	td, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.topics = len(td.Names())
	s.partitions = len(td[fxTopic].Partitions)
	rc, err := adm.DescribeTopicConfigs(ctx, fxTopic)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc[0].Configs {
		if c.Key == "retention.ms" && c.Value != nil {
			s.retention = *c.Value
		}
	}
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.groups = len(groups)
	acls, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().Deny().AllowHosts().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range acls {
		s.acls += len(r.Described)
	}
	users, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.scramUsers = len(users)
	return s
}

// authzCase is one API's row: the requests an unauthorized principal sends
// and the check that each got Kafka's error and no data. open names why an
// API needs no authorization (Kafka's rules), instead of requests.
type authzCase struct {
	open  string
	calls []authzCall
}

type authzCall struct {
	req   kmsg.Request
	check func(resp kmsg.Response) error
}

func code(c int16, want *kerr.Error, what string) error {
	if c != want.Code {
		return fmt.Errorf("%s: error %v, want %v", what, kerr.ErrorForCode(c), want)
	}
	return nil
}

// wantCode is a check that the error code get reads from the response (of
// type R) is want.
func wantCode[R kmsg.Response](want *kerr.Error, what string, get func(R) int16) func(kmsg.Response) error {
	return func(resp kmsg.Response) error { return code(get(resp.(R)), want, what) }
}

// wantNoOffset is a check that the answer get reads from the response (of
// type R) has no offset (or producer id): -1, and the error code want.
func wantNoOffset[R kmsg.Response](want *kerr.Error, what string, get func(R) (offset int64, errorCode int16)) func(kmsg.Response) error {
	return func(resp kmsg.Response) error {
		off, c := get(resp.(R))
		if off != -1 {
			return fmt.Errorf("%s: %d answered, want -1", what, off)
		}
		return code(c, want, what)
	}
}

// build is a request of type R with kmsg's defaults (as NewPtr... makes
// it), then set by fill.
func build[R any, P interface {
	*R
	kmsg.Request
	Default()
}](fill func(P)) kmsg.Request {
	r := P(new(R))
	r.Default()
	fill(r)
	return r
}

// authzCases is the table: one row per API the node serves. A new API
// registered without a row fails TestEveryAPIRefusesAnUnauthorizedPrincipal.
func authzCases(t *testing.T, fxID [16]byte) map[kmsg.Key]authzCase {
	records := oneBatch(t, "bob was here")
	str := kmsg.StringPtr
	one := func(c authzCall) authzCase { return authzCase{calls: []authzCall{c}} }
	return map[kmsg.Key]authzCase{
		kmsg.ApiVersions:               {open: "ApiVersions is answered before authentication, as in Kafka"},
		kmsg.SASLHandshake:             {open: "the SASL handshake authenticates; it needs no ACL"},
		kmsg.SASLAuthenticate:          {open: "the SASL exchange authenticates; it needs no ACL"},
		kmsg.DescribeCluster:           {open: "Kafka answers DescribeCluster (the brokers, as Metadata lists them) without an ACL"},
		kmsg.GetTelemetrySubscriptions: {open: "KIP-714: any client learns its telemetry subscription, as in Kafka"},
		kmsg.PushTelemetry:             {open: "KIP-714: any client pushes its own metrics, as in Kafka"},

		kmsg.Produce: {calls: []authzCall{
			{produceReq(nil, records, fxID), wantNoOffset(kerr.TopicAuthorizationFailed, "produce", func(r *kmsg.ProduceResponse) (int64, int16) {
				return r.Topics[0].Partitions[0].BaseOffset, r.Topics[0].Partitions[0].ErrorCode
			})},
			{produceReq(str(fxTxnID), records, fxID), wantCode(kerr.TransactionalIDAuthorizationFailed, "transactional produce",
				func(r *kmsg.ProduceResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })},
		}},
		kmsg.Fetch: {calls: []authzCall{
			{fetchReq(-1, fxID), func(resp kmsg.Response) error {
				p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
				if len(p.RecordBatches) > 0 || p.HighWatermark > 0 {
					return fmt.Errorf("fetch answered %d bytes, high watermark %d", len(p.RecordBatches), p.HighWatermark)
				}
				return code(p.ErrorCode, kerr.TopicAuthorizationFailed, "fetch")
			}},
			{fetchReq(0, fxID), func(resp kmsg.Response) error { // a follower's fetch needs ClusterAction
				p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
				if len(p.RecordBatches) > 0 {
					return fmt.Errorf("follower fetch answered %d bytes", len(p.RecordBatches))
				}
				return code(p.ErrorCode, kerr.TopicAuthorizationFailed, "follower fetch")
			}},
		}},
		kmsg.DescribeLogDirs: one(authzCall{kmsg.NewPtrDescribeLogDirsRequest(), func(resp kmsg.Response) error { // every partition
			r := resp.(*kmsg.DescribeLogDirsResponse)
			if len(r.Dirs) > 0 {
				return fmt.Errorf("describe log dirs answered %d dirs", len(r.Dirs))
			}
			return code(r.ErrorCode, kerr.ClusterAuthorizationFailed, "describe log dirs")
		}}),
		kmsg.AlterReplicaLogDirs: one(authzCall{build(func(r *kmsg.AlterReplicaLogDirsRequest) {
			d := kmsg.NewAlterReplicaLogDirsRequestDir()
			d.Dir = "/nowhere"
			dt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
			dt.Topic, dt.Partitions = fxTopic, []int32{0}
			d.Topics = append(d.Topics, dt)
			r.Dirs = append(r.Dirs, d)
		}), wantCode(kerr.ClusterAuthorizationFailed, "alter replica log dirs",
			func(r *kmsg.AlterReplicaLogDirsResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })}),
		kmsg.DescribeTopicPartitions: {calls: []authzCall{
			{kmsg.NewPtrDescribeTopicPartitionsRequest(), func(resp kmsg.Response) error { // every topic
				if r := resp.(*kmsg.DescribeTopicPartitionsResponse); len(r.Topics) != 0 || r.NextCursor != nil {
					return fmt.Errorf("all-topics describe lists %d topics, cursor %v", len(r.Topics), r.NextCursor)
				}
				return nil
			}},
			{build(func(r *kmsg.DescribeTopicPartitionsRequest) {
				t := kmsg.NewDescribeTopicPartitionsRequestTopic()
				t.Topic = fxTopic
				r.Topics = append(r.Topics, t)
			}), func(resp kmsg.Response) error {
				r := resp.(*kmsg.DescribeTopicPartitionsResponse)
				if len(r.Topics) != 1 {
					return fmt.Errorf("%d topics answered", len(r.Topics))
				}
				if mt := r.Topics[0]; len(mt.Partitions) != 0 || mt.TopicID != [16]byte{} {
					return fmt.Errorf("%d partitions, id %x", len(mt.Partitions), mt.TopicID)
				}
				return code(r.Topics[0].ErrorCode, kerr.TopicAuthorizationFailed, "describe topic partitions")
			}},
		}},
		kmsg.ListOffsets: one(authzCall{build(func(r *kmsg.ListOffsetsRequest) {
			t := kmsg.NewListOffsetsRequestTopic()
			t.Topic = fxTopic
			p := kmsg.NewListOffsetsRequestTopicPartition()
			p.Timestamp = -1
			t.Partitions = append(t.Partitions, p)
			r.Topics = append(r.Topics, t)
		}), wantNoOffset(kerr.TopicAuthorizationFailed, "list offsets", func(r *kmsg.ListOffsetsResponse) (int64, int16) {
			return r.Topics[0].Partitions[0].Offset, r.Topics[0].Partitions[0].ErrorCode
		})}),
		kmsg.Metadata: {calls: []authzCall{
			{kmsg.NewPtrMetadataRequest(), func(resp kmsg.Response) error { // every topic
				m := resp.(*kmsg.MetadataResponse)
				if len(m.Topics) != 0 {
					return fmt.Errorf("all-topics metadata lists %d topics", len(m.Topics))
				}
				if len(m.Brokers) != 1 {
					return fmt.Errorf("%d brokers listed", len(m.Brokers))
				}
				return nil
			}},
			{metadataReq(fxTopic, false), func(resp kmsg.Response) error {
				mt := resp.(*kmsg.MetadataResponse).Topics[0]
				if len(mt.Partitions) != 0 || mt.TopicID != [16]byte{} {
					return fmt.Errorf("%d partitions, id %x", len(mt.Partitions), mt.TopicID)
				}
				return code(mt.ErrorCode, kerr.TopicAuthorizationFailed, "metadata")
			}},
			{metadataReq("bob-auto", true), func(resp kmsg.Response) error { // auto-creation needs Create
				return code(resp.(*kmsg.MetadataResponse).Topics[0].ErrorCode, kerr.TopicAuthorizationFailed, "auto-create")
			}},
		}},
		kmsg.OffsetCommit: one(authzCall{build(func(r *kmsg.OffsetCommitRequest) {
			r.Group, r.Generation = fxGroup, -1
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic, t.TopicID = fxTopic, fxID // by name to v9, by id from v10
			p := kmsg.NewOffsetCommitRequestTopicPartition()
			p.Offset = 0
			t.Partitions = append(t.Partitions, p)
			r.Topics = append(r.Topics, t)
		}), wantCode(kerr.GroupAuthorizationFailed, "offset commit",
			func(r *kmsg.OffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })}),
		kmsg.OffsetFetch: one(authzCall{build(func(r *kmsg.OffsetFetchRequest) {
			r.Group = fxGroup
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = fxGroup
			r.Groups = append(r.Groups, g)
		}), func(resp kmsg.Response) error {
			o := resp.(*kmsg.OffsetFetchResponse)
			if len(o.Groups) == 1 {
				if len(o.Groups[0].Topics) != 0 {
					return fmt.Errorf("offsets answered: %v", o.Groups[0].Topics)
				}
				return code(o.Groups[0].ErrorCode, kerr.GroupAuthorizationFailed, "offset fetch")
			}
			if len(o.Topics) != 0 {
				return fmt.Errorf("offsets answered: %v", o.Topics)
			}
			return code(o.ErrorCode, kerr.GroupAuthorizationFailed, "offset fetch")
		}}),
		kmsg.FindCoordinator: {calls: []authzCall{
			{findCoordinatorReq(fxGroup, 0), func(resp kmsg.Response) error {
				return coordinatorCode(resp, kerr.GroupAuthorizationFailed)
			}},
			{findCoordinatorReq(fxTxnID, 1), func(resp kmsg.Response) error {
				return coordinatorCode(resp, kerr.TransactionalIDAuthorizationFailed)
			}},
		}},
		kmsg.JoinGroup: one(authzCall{build(func(r *kmsg.JoinGroupRequest) {
			r.Group, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = fxGroup, 10000, 10000, "consumer"
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name = "range"
			r.Protocols = append(r.Protocols, p)
		}), func(resp kmsg.Response) error {
			j := resp.(*kmsg.JoinGroupResponse)
			if len(j.Members) != 0 {
				return fmt.Errorf("%d members answered", len(j.Members))
			}
			return code(j.ErrorCode, kerr.GroupAuthorizationFailed, "join group")
		}}),
		kmsg.Heartbeat: one(authzCall{&kmsg.HeartbeatRequest{Group: fxGroup, MemberID: "m"}, wantCode(kerr.GroupAuthorizationFailed, "heartbeat",
			func(r *kmsg.HeartbeatResponse) int16 { return r.ErrorCode })}),
		kmsg.LeaveGroup: one(authzCall{build(func(r *kmsg.LeaveGroupRequest) {
			r.Group, r.MemberID = fxGroup, "m"
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = "m"
			r.Members = append(r.Members, m)
		}), wantCode(kerr.GroupAuthorizationFailed, "leave group", func(r *kmsg.LeaveGroupResponse) int16 { return r.ErrorCode })}),
		kmsg.SyncGroup: one(authzCall{&kmsg.SyncGroupRequest{Group: fxGroup, MemberID: "m", Generation: 1}, func(resp kmsg.Response) error {
			s := resp.(*kmsg.SyncGroupResponse)
			if len(s.MemberAssignment) != 0 {
				return fmt.Errorf("an assignment answered")
			}
			return code(s.ErrorCode, kerr.GroupAuthorizationFailed, "sync group")
		}}),
		kmsg.DescribeGroups: one(authzCall{&kmsg.DescribeGroupsRequest{Groups: []string{fxGroup}}, func(resp kmsg.Response) error {
			g := resp.(*kmsg.DescribeGroupsResponse).Groups[0]
			if len(g.Members) != 0 || g.ProtocolType != "" {
				return fmt.Errorf("group described: %+v", g)
			}
			return code(g.ErrorCode, kerr.GroupAuthorizationFailed, "describe groups")
		}}),
		kmsg.ListGroups: one(authzCall{kmsg.NewPtrListGroupsRequest(), func(resp kmsg.Response) error {
			l := resp.(*kmsg.ListGroupsResponse)
			if len(l.Groups) != 0 {
				return fmt.Errorf("groups listed: %v", l.Groups)
			}
			if l.ErrorCode != 0 {
				return fmt.Errorf("error %v: Kafka filters the groups listed, without an error", kerr.ErrorForCode(l.ErrorCode))
			}
			return nil
		}}),
		kmsg.CreateTopics: one(authzCall{build(func(r *kmsg.CreateTopicsRequest) {
			r.TimeoutMillis = 5000
			ct := kmsg.NewCreateTopicsRequestTopic()
			ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "bob-topic", 1, 1
			r.Topics = append(r.Topics, ct)
		}), wantCode(kerr.TopicAuthorizationFailed, "create topics", func(r *kmsg.CreateTopicsResponse) int16 { return r.Topics[0].ErrorCode })}),
		kmsg.DeleteTopics: one(authzCall{build(func(r *kmsg.DeleteTopicsRequest) {
			r.TimeoutMillis, r.TopicNames = 5000, []string{fxTopic}
			dt := kmsg.NewDeleteTopicsRequestTopic()
			dt.Topic = str(fxTopic)
			r.Topics = append(r.Topics, dt)
		}), wantCode(kerr.TopicAuthorizationFailed, "delete topics", func(r *kmsg.DeleteTopicsResponse) int16 { return r.Topics[0].ErrorCode })}),
		kmsg.DeleteRecords: one(authzCall{build(func(r *kmsg.DeleteRecordsRequest) {
			r.TimeoutMillis = 5000
			dt := kmsg.NewDeleteRecordsRequestTopic()
			dt.Topic = fxTopic
			p := kmsg.NewDeleteRecordsRequestTopicPartition()
			p.Offset = -1
			dt.Partitions = append(dt.Partitions, p)
			r.Topics = append(r.Topics, dt)
		}), wantNoOffset(kerr.TopicAuthorizationFailed, "delete records", func(r *kmsg.DeleteRecordsResponse) (int64, int16) {
			return r.Topics[0].Partitions[0].LowWatermark, r.Topics[0].Partitions[0].ErrorCode
		})}),
		kmsg.InitProducerID: {calls: []authzCall{
			{&kmsg.InitProducerIDRequest{TransactionalID: str(fxTxnID), TransactionTimeoutMillis: 10000, ProducerID: -1, ProducerEpoch: -1},
				wantNoOffset(kerr.TransactionalIDAuthorizationFailed, "transactional init producer id",
					func(r *kmsg.InitProducerIDResponse) (int64, int16) { return r.ProducerID, r.ErrorCode })},
			{&kmsg.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1}, wantNoOffset(kerr.ClusterAuthorizationFailed, "idempotent init producer id",
				func(r *kmsg.InitProducerIDResponse) (int64, int16) { return r.ProducerID, r.ErrorCode })},
		}},
		kmsg.OffsetForLeaderEpoch: one(authzCall{build(func(r *kmsg.OffsetForLeaderEpochRequest) {
			r.ReplicaID = -1
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = fxTopic
			p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			p.CurrentLeaderEpoch, p.LeaderEpoch = -1, 0
			t.Partitions = append(t.Partitions, p)
			r.Topics = append(r.Topics, t)
		}), wantNoOffset(kerr.TopicAuthorizationFailed, "offset for leader epoch", func(r *kmsg.OffsetForLeaderEpochResponse) (int64, int16) {
			return r.Topics[0].Partitions[0].EndOffset, r.Topics[0].Partitions[0].ErrorCode
		})}),
		kmsg.AddPartitionsToTxn: one(authzCall{build(func(r *kmsg.AddPartitionsToTxnRequest) {
			r.TransactionalID, r.ProducerID, r.ProducerEpoch = fxTxnID, 1, 0
			tt := kmsg.NewAddPartitionsToTxnRequestTopic()
			tt.Topic, tt.Partitions = fxTopic, []int32{0}
			r.Topics = append(r.Topics, tt)
			tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
			tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch = fxTxnID, 1, 0
			xt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			xt.Topic, xt.Partitions = fxTopic, []int32{0}
			tx.Topics = append(tx.Topics, xt)
			r.Transactions = append(r.Transactions, tx)
		}), func(resp kmsg.Response) error {
			a := resp.(*kmsg.AddPartitionsToTxnResponse)
			if a.Version >= 4 { // the partition leaders' batch form needs ClusterAction
				return code(a.ErrorCode, kerr.ClusterAuthorizationFailed, "add partitions to txn v4")
			}
			return code(a.Topics[0].Partitions[0].ErrorCode, kerr.TransactionalIDAuthorizationFailed, "add partitions to txn")
		}}),
		kmsg.AddOffsetsToTxn: one(authzCall{&kmsg.AddOffsetsToTxnRequest{TransactionalID: fxTxnID, ProducerID: 1, Group: fxGroup},
			wantCode(kerr.TransactionalIDAuthorizationFailed, "add offsets to txn", func(r *kmsg.AddOffsetsToTxnResponse) int16 { return r.ErrorCode })}),
		kmsg.EndTxn: one(authzCall{&kmsg.EndTxnRequest{TransactionalID: fxTxnID, ProducerID: 1, Commit: true},
			wantCode(kerr.TransactionalIDAuthorizationFailed, "end txn", func(r *kmsg.EndTxnResponse) int16 { return r.ErrorCode })}),
		kmsg.WriteTxnMarkers: one(authzCall{build(func(r *kmsg.WriteTxnMarkersRequest) {
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID, m.ProducerEpoch, m.Committed = 1, 0, false
			mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			mt.Topic, mt.Partitions = fxTopic, []int32{0}
			m.Topics = append(m.Topics, mt)
			r.Markers = append(r.Markers, m)
		}), wantCode(kerr.ClusterAuthorizationFailed, "write txn markers",
			func(r *kmsg.WriteTxnMarkersResponse) int16 { return r.Markers[0].Topics[0].Partitions[0].ErrorCode })}),
		kmsg.TxnOffsetCommit: one(authzCall{build(func(r *kmsg.TxnOffsetCommitRequest) {
			r.TransactionalID, r.Group, r.ProducerID, r.Generation = fxTxnID, fxGroup, 1, -1
			tt := kmsg.NewTxnOffsetCommitRequestTopic()
			tt.Topic = fxTopic
			p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			tt.Partitions = append(tt.Partitions, p)
			r.Topics = append(r.Topics, tt)
		}), wantCode(kerr.TransactionalIDAuthorizationFailed, "txn offset commit",
			func(r *kmsg.TxnOffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })}),
		kmsg.DescribeACLs: one(authzCall{&kmsg.DescribeACLsRequest{ResourceType: 1, ResourcePatternType: 1, Operation: 1, PermissionType: 1},
			func(resp kmsg.Response) error {
				d := resp.(*kmsg.DescribeACLsResponse)
				if len(d.Resources) != 0 {
					return fmt.Errorf("ACLs described")
				}
				return code(d.ErrorCode, kerr.ClusterAuthorizationFailed, "describe acls")
			}}),
		kmsg.CreateACLs: one(authzCall{build(func(r *kmsg.CreateACLsRequest) {
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = 2, "*", 3
			c.Principal, c.Host, c.Operation, c.PermissionType = "User:bob", "*", 2, 3
			r.Creations = append(r.Creations, c)
		}), wantCode(kerr.ClusterAuthorizationFailed, "create acls", func(r *kmsg.CreateACLsResponse) int16 { return r.Results[0].ErrorCode })}),
		kmsg.DeleteACLs: one(authzCall{build(func(r *kmsg.DeleteACLsRequest) {
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = 1, 1, 1, 1
			r.Filters = append(r.Filters, f)
		}), func(resp kmsg.Response) error {
			res := resp.(*kmsg.DeleteACLsResponse).Results[0]
			if len(res.MatchingACLs) != 0 {
				return fmt.Errorf("%d ACLs deleted", len(res.MatchingACLs))
			}
			return code(res.ErrorCode, kerr.ClusterAuthorizationFailed, "delete acls")
		}}),
		kmsg.DescribeConfigs: {calls: []authzCall{
			{describeConfigsReq(2, fxTopic), func(resp kmsg.Response) error {
				r := resp.(*kmsg.DescribeConfigsResponse).Resources[0]
				if len(r.Configs) != 0 {
					return fmt.Errorf("%d configs described", len(r.Configs))
				}
				return code(r.ErrorCode, kerr.TopicAuthorizationFailed, "describe topic configs")
			}},
			{describeConfigsReq(4, "0"), func(resp kmsg.Response) error {
				r := resp.(*kmsg.DescribeConfigsResponse).Resources[0]
				if len(r.Configs) != 0 {
					return fmt.Errorf("%d configs described", len(r.Configs))
				}
				return code(r.ErrorCode, kerr.ClusterAuthorizationFailed, "describe broker configs")
			}},
			{describeConfigsReq(16, "bob-sub"), func(resp kmsg.Response) error { // KIP-714 client metrics
				r := resp.(*kmsg.DescribeConfigsResponse).Resources[0]
				if len(r.Configs) != 0 {
					return fmt.Errorf("%d configs described", len(r.Configs))
				}
				return code(r.ErrorCode, kerr.ClusterAuthorizationFailed, "describe client metrics configs")
			}},
			{describeConfigsReq(32, fxGroup), func(resp kmsg.Response) error { // KIP-848 group configs
				r := resp.(*kmsg.DescribeConfigsResponse).Resources[0]
				if len(r.Configs) != 0 {
					return fmt.Errorf("%d configs described", len(r.Configs))
				}
				return code(r.ErrorCode, kerr.GroupAuthorizationFailed, "describe group configs")
			}},
		}},
		kmsg.AlterConfigs: one(authzCall{build(func(r *kmsg.AlterConfigsRequest) {
			res := kmsg.NewAlterConfigsRequestResource()
			res.ResourceType, res.ResourceName = 2, fxTopic
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "retention.ms", str("1")
			res.Configs = append(res.Configs, c)
			r.Resources = append(r.Resources, res)
		}), wantCode(kerr.TopicAuthorizationFailed, "alter configs", func(r *kmsg.AlterConfigsResponse) int16 { return r.Resources[0].ErrorCode })}),
		kmsg.IncrementalAlterConfigs: {calls: []authzCall{
			{build(func(r *kmsg.IncrementalAlterConfigsRequest) {
				res := kmsg.NewIncrementalAlterConfigsRequestResource()
				res.ResourceType, res.ResourceName = 2, fxTopic
				c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
				c.Name, c.Value = "retention.ms", str("1")
				res.Configs = append(res.Configs, c)
				r.Resources = append(r.Resources, res)
			}), wantCode(kerr.TopicAuthorizationFailed, "incremental alter configs",
				func(r *kmsg.IncrementalAlterConfigsResponse) int16 { return r.Resources[0].ErrorCode })},
			{build(func(r *kmsg.IncrementalAlterConfigsRequest) { // a KIP-714 client metrics subscription
				res := kmsg.NewIncrementalAlterConfigsRequestResource()
				res.ResourceType, res.ResourceName = 16, "bob-sub"
				c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
				c.Name, c.Value = "metrics", str("*")
				res.Configs = append(res.Configs, c)
				r.Resources = append(r.Resources, res)
			}), wantCode(kerr.ClusterAuthorizationFailed, "incremental alter client metrics",
				func(r *kmsg.IncrementalAlterConfigsResponse) int16 { return r.Resources[0].ErrorCode })},
			{build(func(r *kmsg.IncrementalAlterConfigsRequest) { // KIP-848 group configs
				res := kmsg.NewIncrementalAlterConfigsRequestResource()
				res.ResourceType, res.ResourceName = 32, fxGroup
				c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
				c.Name, c.Value = "consumer.session.timeout.ms", str("50000")
				res.Configs = append(res.Configs, c)
				r.Resources = append(r.Resources, res)
			}), wantCode(kerr.GroupAuthorizationFailed, "incremental alter group configs",
				func(r *kmsg.IncrementalAlterConfigsResponse) int16 { return r.Resources[0].ErrorCode })},
		}},
		kmsg.ListConfigResources: one(authzCall{kmsg.NewPtrListConfigResourcesRequest(), func(resp kmsg.Response) error {
			r := resp.(*kmsg.ListConfigResourcesResponse)
			if len(r.ConfigResources) != 0 {
				return fmt.Errorf("list config resources answered %d resources", len(r.ConfigResources))
			}
			return code(r.ErrorCode, kerr.ClusterAuthorizationFailed, "list config resources")
		}}),
		kmsg.CreatePartitions: one(authzCall{build(func(r *kmsg.CreatePartitionsRequest) {
			r.TimeoutMillis = 5000
			ct := kmsg.NewCreatePartitionsRequestTopic()
			ct.Topic, ct.Count = fxTopic, 3
			r.Topics = append(r.Topics, ct)
		}), wantCode(kerr.TopicAuthorizationFailed, "create partitions", func(r *kmsg.CreatePartitionsResponse) int16 { return r.Topics[0].ErrorCode })}),
		kmsg.DeleteGroups: one(authzCall{&kmsg.DeleteGroupsRequest{Groups: []string{fxGroup}}, wantCode(kerr.GroupAuthorizationFailed, "delete groups",
			func(r *kmsg.DeleteGroupsResponse) int16 { return r.Groups[0].ErrorCode })}),
		kmsg.ElectLeaders: one(authzCall{build(func(r *kmsg.ElectLeadersRequest) {
			r.TimeoutMillis = 5000
			et := kmsg.NewElectLeadersRequestTopic()
			et.Topic, et.Partitions = fxTopic, []int32{0}
			r.Topics = append(r.Topics, et)
		}), func(resp kmsg.Response) error {
			e := resp.(*kmsg.ElectLeadersResponse)
			if err := code(e.ErrorCode, kerr.ClusterAuthorizationFailed, "elect leaders"); err != nil {
				return err
			}
			return code(e.Topics[0].Partitions[0].ErrorCode, kerr.ClusterAuthorizationFailed, "elect leaders partition")
		}}),
		kmsg.AlterPartitionAssignments: one(authzCall{build(func(r *kmsg.AlterPartitionAssignmentsRequest) {
			r.TimeoutMillis = 5000
			at := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			at.Topic = fxTopic
			p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			p.Replicas = []int32{0}
			at.Partitions = append(at.Partitions, p)
			r.Topics = append(r.Topics, at)
		}), wantCode(kerr.ClusterAuthorizationFailed, "alter partition reassignments",
			func(r *kmsg.AlterPartitionAssignmentsResponse) int16 { return r.ErrorCode })}),
		kmsg.ListPartitionReassignments: one(authzCall{&kmsg.ListPartitionReassignmentsRequest{TimeoutMillis: 5000}, wantCode(kerr.ClusterAuthorizationFailed, "list partition reassignments",
			func(r *kmsg.ListPartitionReassignmentsResponse) int16 { return r.ErrorCode })}),
		kmsg.UnregisterBroker: one(authzCall{&kmsg.UnregisterBrokerRequest{BrokerID: 0}, wantCode(kerr.ClusterAuthorizationFailed, "unregister broker",
			func(r *kmsg.UnregisterBrokerResponse) int16 { return r.ErrorCode })}),
		kmsg.OffsetDelete: one(authzCall{build(func(r *kmsg.OffsetDeleteRequest) {
			r.Group = fxGroup
			ot := kmsg.NewOffsetDeleteRequestTopic()
			ot.Topic = fxTopic
			ot.Partitions = append(ot.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
			r.Topics = append(r.Topics, ot)
		}), wantCode(kerr.GroupAuthorizationFailed, "offset delete", func(r *kmsg.OffsetDeleteResponse) int16 { return r.ErrorCode })}),
		kmsg.DescribeClientQuotas: one(authzCall{kmsg.NewPtrDescribeClientQuotasRequest(), func(resp kmsg.Response) error {
			d := resp.(*kmsg.DescribeClientQuotasResponse)
			if len(d.Entries) != 0 {
				return fmt.Errorf("quotas described")
			}
			return code(d.ErrorCode, kerr.ClusterAuthorizationFailed, "describe client quotas")
		}}),
		kmsg.AlterClientQuotas: one(authzCall{build(func(r *kmsg.AlterClientQuotasRequest) {
			e := kmsg.NewAlterClientQuotasRequestEntry()
			ec := kmsg.NewAlterClientQuotasRequestEntryEntity()
			ec.Type, ec.Name = "user", str("bob")
			e.Entity = append(e.Entity, ec)
			op := kmsg.NewAlterClientQuotasRequestEntryOp()
			op.Key, op.Value = "producer_byte_rate", 1e9
			e.Ops = append(e.Ops, op)
			r.Entries = append(r.Entries, e)
		}), wantCode(kerr.ClusterAuthorizationFailed, "alter client quotas",
			func(r *kmsg.AlterClientQuotasResponse) int16 { return r.Entries[0].ErrorCode })}),
		kmsg.DescribeUserSCRAMCredentials: one(authzCall{kmsg.NewPtrDescribeUserSCRAMCredentialsRequest(), func(resp kmsg.Response) error {
			d := resp.(*kmsg.DescribeUserSCRAMCredentialsResponse)
			if len(d.Results) != 0 {
				return fmt.Errorf("%d users described", len(d.Results))
			}
			return code(d.ErrorCode, kerr.ClusterAuthorizationFailed, "describe user scram credentials")
		}}),
		kmsg.AlterUserSCRAMCredentials: one(authzCall{build(func(r *kmsg.AlterUserSCRAMCredentialsRequest) {
			d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			d.Name, d.Mechanism = "carol", 1
			r.Deletions = append(r.Deletions, d)
		}), wantCode(kerr.ClusterAuthorizationFailed, "alter user scram credentials",
			func(r *kmsg.AlterUserSCRAMCredentialsResponse) int16 { return r.Results[0].ErrorCode })}),
		// Delegation tokens (KIP-48, KIP-373): a token owned by another
		// principal needs CreateTokens on that user; renew and expire need
		// no ACL but the token's owner or a renewer (an unknown HMAC is not
		// found); describe leaves out the tokens bob may not see.
		kmsg.CreateDelegationToken: one(authzCall{build(func(r *kmsg.CreateDelegationTokenRequest) {
			r.OwnerPrincipalType, r.OwnerPrincipalName = str("User"), str("alice")
			r.MaxLifetimeMillis = -1
		}), wantCode(kerr.DelegationTokenAuthorizationFailed, "create delegation token for alice",
			func(r *kmsg.CreateDelegationTokenResponse) int16 { return r.ErrorCode })}),
		kmsg.RenewDelegationToken: one(authzCall{build(func(r *kmsg.RenewDelegationTokenRequest) { r.HMAC = []byte("not a token") }),
			wantCode(kerr.DelegationTokenNotFound, "renew delegation token", func(r *kmsg.RenewDelegationTokenResponse) int16 { return r.ErrorCode })}),
		kmsg.ExpireDelegationToken: one(authzCall{build(func(r *kmsg.ExpireDelegationTokenRequest) { r.HMAC = []byte("not a token") }),
			wantCode(kerr.DelegationTokenNotFound, "expire delegation token", func(r *kmsg.ExpireDelegationTokenResponse) int16 { return r.ErrorCode })}),
		kmsg.DescribeDelegationToken: one(authzCall{kmsg.NewPtrDescribeDelegationTokenRequest(), func(resp kmsg.Response) error {
			d := resp.(*kmsg.DescribeDelegationTokenResponse)
			if len(d.TokenDetails) != 0 {
				return fmt.Errorf("%d tokens described", len(d.TokenDetails))
			}
			if d.ErrorCode != 0 {
				return fmt.Errorf("describe delegation token: %v", kerr.ErrorForCode(d.ErrorCode))
			}
			return nil
		}}),
		kmsg.DescribeProducers: one(authzCall{build(func(r *kmsg.DescribeProducersRequest) {
			dt := kmsg.NewDescribeProducersRequestTopic()
			dt.Topic, dt.Partitions = fxTopic, []int32{0}
			r.Topics = append(r.Topics, dt)
		}), func(resp kmsg.Response) error {
			p := resp.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0]
			if len(p.ActiveProducers) != 0 {
				return fmt.Errorf("%d producers described", len(p.ActiveProducers))
			}
			return code(p.ErrorCode, kerr.TopicAuthorizationFailed, "describe producers")
		}}),
		kmsg.DescribeTransactions: one(authzCall{&kmsg.DescribeTransactionsRequest{TransactionalIDs: []string{fxTxnID}}, func(resp kmsg.Response) error {
			s := resp.(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
			if s.ProducerID > 0 || len(s.Topics) != 0 {
				return fmt.Errorf("transaction described: %+v", s)
			}
			return code(s.ErrorCode, kerr.TransactionalIDAuthorizationFailed, "describe transactions")
		}}),
		kmsg.ListTransactions: one(authzCall{kmsg.NewPtrListTransactionsRequest(), func(resp kmsg.Response) error {
			l := resp.(*kmsg.ListTransactionsResponse)
			if len(l.TransactionStates) != 0 {
				return fmt.Errorf("transactions listed: %v", l.TransactionStates)
			}
			return nil
		}}),
		// KIP-932 share groups (package share).
		kmsg.UpdateFeatures: one(authzCall{build(func(r *kmsg.UpdateFeaturesRequest) {
			u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
			u.Feature, u.MaxVersionLevel, u.UpgradeType = "transaction.version", 1, 2
			r.FeatureUpdates = append(r.FeatureUpdates, u)
		}), wantCode(kerr.ClusterAuthorizationFailed, "update features", func(r *kmsg.UpdateFeaturesResponse) int16 { return r.ErrorCode })}),
		kmsg.ConsumerGroupHeartbeat: one(authzCall{build(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Group, r.MemberID, r.RebalanceTimeoutMillis, r.SubscribedTopicNames = fxGroup, "bob-member", 5000, []string{fxTopic}
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}), wantCode(kerr.GroupAuthorizationFailed, "consumer group heartbeat", func(r *kmsg.ConsumerGroupHeartbeatResponse) int16 { return r.ErrorCode })}),
		kmsg.ConsumerGroupDescribe: one(authzCall{build(func(r *kmsg.ConsumerGroupDescribeRequest) { r.Groups = []string{fxGroup} }),
			wantCode(kerr.GroupAuthorizationFailed, "consumer group describe", func(r *kmsg.ConsumerGroupDescribeResponse) int16 { return r.Groups[0].ErrorCode })}),
		kmsg.ShareGroupHeartbeat: one(authzCall{build(func(r *kmsg.ShareGroupHeartbeatRequest) {
			r.GroupID, r.MemberID, r.SubscribedTopicNames = fxGroup, "bob-member", []string{fxTopic}
		}), wantCode(kerr.GroupAuthorizationFailed, "share group heartbeat", func(r *kmsg.ShareGroupHeartbeatResponse) int16 { return r.ErrorCode })}),
		kmsg.ShareGroupDescribe: one(authzCall{build(func(r *kmsg.ShareGroupDescribeRequest) { r.GroupIDs = []string{fxGroup} }),
			wantCode(kerr.GroupAuthorizationFailed, "share group describe", func(r *kmsg.ShareGroupDescribeResponse) int16 { return r.Groups[0].ErrorCode })}),
		kmsg.ShareFetch: one(authzCall{build(func(r *kmsg.ShareFetchRequest) {
			r.GroupID, r.MemberID = str(fxGroup), str("bob-member")
			ft := kmsg.NewShareFetchRequestTopic()
			ft.TopicID = fxID
			ft.Partitions = append(ft.Partitions, kmsg.NewShareFetchRequestTopicPartition())
			r.Topics = append(r.Topics, ft)
		}), wantCode(kerr.GroupAuthorizationFailed, "share fetch", func(r *kmsg.ShareFetchResponse) int16 { return r.ErrorCode })}),
		kmsg.ShareAcknowledge: one(authzCall{build(func(r *kmsg.ShareAcknowledgeRequest) {
			r.GroupID, r.MemberID, r.ShareSessionEpoch = str(fxGroup), str("bob-member"), 1
		}), wantCode(kerr.GroupAuthorizationFailed, "share acknowledge", func(r *kmsg.ShareAcknowledgeResponse) int16 { return r.ErrorCode })}),
		kmsg.InitializeShareGroupState: one(authzCall{build(func(r *kmsg.InitializeShareGroupStateRequest) {
			r.GroupID = fxGroup
			it := kmsg.NewInitializeShareGroupStateRequestTopic()
			it.TopicID = fxID
			it.Partitions = append(it.Partitions, kmsg.NewInitializeShareGroupStateRequestTopicPartition())
			r.Topics = append(r.Topics, it)
		}), wantCode(kerr.ClusterAuthorizationFailed, "initialize share group state",
			func(r *kmsg.InitializeShareGroupStateResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })}),
		kmsg.ReadShareGroupState: one(authzCall{build(func(r *kmsg.ReadShareGroupStateRequest) {
			r.GroupID = fxGroup
			rt := kmsg.NewReadShareGroupStateRequestTopic()
			rt.TopicID = fxID
			rt.Partitions = append(rt.Partitions, kmsg.NewReadShareGroupStateRequestTopicPartition())
			r.Topics = append(r.Topics, rt)
		}), wantCode(kerr.ClusterAuthorizationFailed, "read share group state",
			func(r *kmsg.ReadShareGroupStateResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })}),
		kmsg.WriteShareGroupState: one(authzCall{build(func(r *kmsg.WriteShareGroupStateRequest) {
			r.GroupID = fxGroup
			wt := kmsg.NewWriteShareGroupStateRequestTopic()
			wt.TopicID = fxID
			wt.Partitions = append(wt.Partitions, kmsg.NewWriteShareGroupStateRequestTopicPartition())
			r.Topics = append(r.Topics, wt)
		}), wantCode(kerr.ClusterAuthorizationFailed, "write share group state",
			func(r *kmsg.WriteShareGroupStateResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })}),
		kmsg.DeleteShareGroupState: one(authzCall{build(func(r *kmsg.DeleteShareGroupStateRequest) {
			r.GroupID = fxGroup
			dt := kmsg.NewDeleteShareGroupStateRequestTopic()
			dt.TopicID = fxID
			dt.Partitions = append(dt.Partitions, kmsg.NewDeleteShareGroupStateRequestTopicPartition())
			r.Topics = append(r.Topics, dt)
		}), wantCode(kerr.ClusterAuthorizationFailed, "delete share group state",
			func(r *kmsg.DeleteShareGroupStateResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })}),
		kmsg.ReadShareGroupStateSummary: one(authzCall{build(func(r *kmsg.ReadShareGroupStateSummaryRequest) {
			r.GroupID = fxGroup
			rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
			rt.TopicID = fxID
			rt.Partitions = append(rt.Partitions, kmsg.NewReadShareGroupStateSummaryRequestTopicPartition())
			r.Topics = append(r.Topics, rt)
		}), wantCode(kerr.ClusterAuthorizationFailed, "read share group state summary",
			func(r *kmsg.ReadShareGroupStateSummaryResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })}),
		kmsg.DescribeShareGroupOffsets: one(authzCall{build(func(r *kmsg.DescribeShareGroupOffsetsRequest) {
			g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
			g.GroupID = fxGroup
			r.Groups = append(r.Groups, g)
		}), wantCode(kerr.GroupAuthorizationFailed, "describe share group offsets",
			func(r *kmsg.DescribeShareGroupOffsetsResponse) int16 { return r.Groups[0].ErrorCode })}),
		kmsg.AlterShareGroupOffsets: one(authzCall{build(func(r *kmsg.AlterShareGroupOffsetsRequest) { r.GroupID = fxGroup }),
			wantCode(kerr.GroupAuthorizationFailed, "alter share group offsets", func(r *kmsg.AlterShareGroupOffsetsResponse) int16 { return r.ErrorCode })}),
		kmsg.DeleteShareGroupOffsets: one(authzCall{build(func(r *kmsg.DeleteShareGroupOffsetsRequest) { r.GroupID = fxGroup }),
			wantCode(kerr.GroupAuthorizationFailed, "delete share group offsets", func(r *kmsg.DeleteShareGroupOffsetsResponse) int16 { return r.ErrorCode })}),
	}
}

// produceReq is an acks=all Produce of records to the fixture's topic, in
// the transaction transactionID (nil: none); id is the topic's.
func produceReq(transactionID *string, records []byte, id [16]byte) kmsg.Request {
	r := kmsg.NewPtrProduceRequest()
	r.Acks, r.TimeoutMillis, r.TransactionID = -1, 5000, transactionID
	t := kmsg.NewProduceRequestTopic()
	t.Topic, t.TopicID = fxTopic, id
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = records
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func fetchReq(replica int32, id [16]byte) kmsg.Request {
	r := kmsg.NewPtrFetchRequest()
	r.ReplicaID, r.ReplicaState.ID, r.MaxWaitMillis, r.MaxBytes = replica, replica, 100, 1<<20 // ReplicaState from v15 (KIP-903)
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = fxTopic, id
	p := kmsg.NewFetchRequestTopicPartition()
	p.PartitionMaxBytes, p.CurrentLeaderEpoch = 1<<20, -1
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func metadataReq(topic string, autoCreate bool) kmsg.Request {
	r := kmsg.NewPtrMetadataRequest()
	r.AllowAutoTopicCreation = autoCreate
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	r.Topics = append(r.Topics, mt)
	return r
}

func findCoordinatorReq(key string, keyType int8) kmsg.Request {
	r := kmsg.NewPtrFindCoordinatorRequest()
	r.CoordinatorKey, r.CoordinatorKeys, r.CoordinatorType = key, []string{key}, keyType
	return r
}

func coordinatorCode(resp kmsg.Response, want *kerr.Error) error {
	f := resp.(*kmsg.FindCoordinatorResponse)
	if len(f.Coordinators) == 1 {
		if f.Coordinators[0].NodeID != -1 {
			return fmt.Errorf("coordinator %d answered", f.Coordinators[0].NodeID)
		}
		return code(f.Coordinators[0].ErrorCode, want, "find coordinator")
	}
	return code(f.ErrorCode, want, "find coordinator")
}

func describeConfigsReq(resourceType kmsg.ConfigResourceType, name string) kmsg.Request {
	r := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = resourceType, name
	r.Resources = append(r.Resources, res)
	return r
}

// TestEveryAPIRefusesAnUnauthorizedPrincipal walks every API the node
// serves, as its ApiVersions answer lists them (computed from the
// kafka.Registry at run time), and sends each as bob, a SASL PLAIN user
// without ACLs, over a real franz-go client: each answers Kafka's
// authorization error, and afterwards nothing bob aimed at (the topic's
// records and config, the group's offsets, the ACLs, the credentials) has
// moved. An API registered without a row here fails the test.
func TestEveryAPIRefusesAnUnauthorizedPrincipal(t *testing.T) {
	a := testnode.StartACLNode(t)
	ctx := proctest.Context(t, 90*time.Second)
	writeFixture(t, ctx, a)
	before := fixtureState(t, ctx, a)
	if before.hw < 3 || before.committed != 2 || before.acls != 1 || before.scramUsers != 1 || before.groups != 1 {
		t.Fatalf("fixture: %+v", before)
	}

	bob := a.Client(t, "bob")
	versions, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	cases := authzCases(t, testnode.TopicID(t, a.Super, fxTopic))
	served := map[kmsg.Key]bool{}
	for _, k := range versions.ApiKeys {
		key := kmsg.Key(k.ApiKey)
		served[key] = true
		c, ok := cases[key]
		switch {
		case !ok:
			t.Errorf("%s (key %d) is served but has no row in authzCases: give it Kafka's authorization check and a row", kmsg.NameForKey(k.ApiKey), k.ApiKey)
			continue
		case c.open != "":
			continue
		}
		for i, call := range c.calls {
			resp, err := bob.Broker(0).Request(ctx, call.req)
			if err != nil {
				t.Errorf("%s #%d: %v", kmsg.NameForKey(k.ApiKey), i, err)
				continue
			}
			if err := call.check(resp); err != nil {
				t.Errorf("%s #%d (v%d): %v", kmsg.NameForKey(k.ApiKey), i, resp.GetVersion(), err)
			}
		}
	}
	for key := range cases {
		if !served[key] {
			t.Errorf("authzCases has a row for %s, which the node does not serve", kmsg.NameForKey(int16(key)))
		}
	}
	if after := fixtureState(t, ctx, a); after != before {
		t.Errorf("bob's refused requests changed the node:\nbefore %+v\nafter  %+v", before, after)
	}
	// Each denial was audited: the metric counted them.
	fams := testnode.Scrape(t, a.N)
	if v := testnode.MustMetric(t, fams, "kafka_security_authorizer_authorization_denied_total", "request", "Produce", "operation", "WRITE", "resource_type", "TOPIC"); v < 1 {
		t.Errorf("denied Produce counted %v times", v)
	}
}

// TestACLsAllowWhatTheyName: alice, with prefixed ACLs on app- topics and
// groups, produces (idempotently: Write on a topic stands for
// IdempotentWrite, KIP-679) and consumes in a group; Metadata lists her
// topics and not the others; a DENY on one topic wins over the prefixed
// ALLOW; a super user (admin over SASL) does anything; a change of the
// ACLs applies at once without a restart.
func TestACLsAllowWhatTheyName(t *testing.T) {
	a := testnode.StartACLNode(t)
	ctx := proctest.Context(t, 90*time.Second)
	adm := kadm.NewClient(a.Super)
	for _, topic := range []string{"app-orders", "app-blocked", "other"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	a.AddACLs(t, ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("app-").Groups("app-").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead, kadm.OpWrite))
	a.AddACLs(t, ctx, kadm.NewACLs().Deny("User:alice").DenyHosts().Topics("app-blocked").Operations(kadm.OpAll))

	alice := a.Client(t, "alice", kgo.ConsumeTopics("app-orders"), kgo.ConsumerGroup("app-consumers"), kgo.DefaultProduceTopic("app-orders"))
	for i := range 5 {
		if err := alice.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("order-%d", i))}).FirstErr(); err != nil {
			t.Fatalf("alice produce: %v", err)
		}
	}
	var got int
	for got < 5 && ctx.Err() == nil {
		fs := alice.PollFetches(ctx)
		if err := fs.Err0(); err != nil && ctx.Err() == nil {
			t.Fatalf("alice consume: %v", err)
		}
		got += fs.NumRecords()
	}
	if err := alice.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("alice commit: %v", err)
	}
	md, err := kadm.NewClient(alice).Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := md.Topics.Names(); len(names) != 1 || names[0] != "app-orders" {
		t.Fatalf("alice's metadata lists %v, want app-orders alone (app-blocked is denied, other has no ACL)", names)
	}
	err = alice.ProduceSync(ctx, &kgo.Record{Topic: "app-blocked", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce to the denied topic: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	admin := a.Client(t, "admin")
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "other", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("the super user's produce: %v", err)
	}

	// KIP-430: the authorized operations, when asked.
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.IncludeTopicAuthorizedOperations = true
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("app-orders")
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	const readWriteDescribe = 1<<3 | 1<<4 | 1<<8 // Read, Write, Describe
	if got := mresp.Topics[0].AuthorizedOperations; got != readWriteDescribe {
		t.Errorf("alice's authorized operations on app-orders: %b, want %b", got, readWriteDescribe)
	}
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	for _, c := range []struct {
		cl   *kgo.Client
		want int32
	}{{alice, 0}, {admin, 1<<5 | 1<<9 | 1<<10 | 1<<11 | 1<<12 | 1<<7 | 1<<8}} {
		r, err := dc.RequestWith(ctx, c.cl)
		if err != nil {
			t.Fatal(err)
		}
		if r.ClusterAuthorizedOperations != c.want {
			t.Errorf("cluster authorized operations %b, want %b", r.ClusterAuthorizedOperations, c.want)
		}
	}

	// An ACL added now applies to bob's next request, with no restart.
	bob := a.Client(t, "bob")
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "other", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob before his ACL: %v", err)
	}
	a.AddACLs(t, ctx, kadm.NewACLs().Allow("User:bob").AllowHosts().Topics("other").Operations(kadm.OpWrite))
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "other", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("bob after his ACL: %v", err)
	}
	// And removing it takes it away.
	del := kadm.NewACLs().Allow("User:bob").AllowHosts().Topics("other").Operations(kadm.OpWrite)
	if _, err := adm.DeleteACLs(ctx, del); err != nil {
		t.Fatal(err)
	}
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "other", Value: []byte("y")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob after his ACL was removed: %v", err)
	}
}

// TestAllowEveryoneIfNoACLFound: with allow_everyone_if_no_acl_found, bob
// may use a topic no ACL names, and not one with an ACL for alice alone.
func TestAllowEveryoneIfNoACLFound(t *testing.T) {
	a := testnode.StartACLNode(t, func(c *config.Broker) { c.AllowEveryoneIfNoACLFound = true })
	ctx := proctest.Context(t, 60*time.Second)
	adm := kadm.NewClient(a.Super)
	for _, topic := range []string{"open", "alices"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	a.AddACLs(t, ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("alices").Operations(kadm.OpWrite))
	bob := a.Client(t, "bob")
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "open", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("bob on a topic without ACLs: %v", err)
	}
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "alices", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob on alice's topic: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}
