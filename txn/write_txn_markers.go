package txn

// WriteTxnMarkers (key 27), versions 0-2.
//
//   - Sent by a transaction coordinator to the leader of each partition of
//     a transaction that ends: the leader appends the COMMIT or ABORT
//     control batch of the producer (with the coordinator's epoch) and
//     answers once it is committed (acks=all). On a __consumer_offsets
//     partition the group coordinator then applies (commit) or drops
//     (abort) the producer's transactional offsets.
//   - v1: flexible versions.
//   - v2: TransactionVersion per marker (KIP-1228): the leader checks a
//     transactions v2 marker (version 2) as Kafka 4.2+ does: its epoch,
//     bumped by the end, must be above the producer's, or equal to it
//     only once the transaction is no longer open (the retry of a marker
//     written, KAFKA-19999), else INVALID_PRODUCER_EPOCH. Requests v0-v1,
//     and markers of version 0-1, keep the older rule (not below the
//     producer's epoch).
//     Shale's own coordinator (KafkaMarkers, over kgo, which picks v2)
//     sends version 0, so its markers keep the older rule: its fence of
//     a transactions v2 transaction at an exhausted epoch does not bump
//     the epoch, which the v2 rule would refuse.
//
// Errors per partition: NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
// NOT_ENOUGH_REPLICAS, and what the log answers (a marker from an older
// coordinator epoch: TRANSACTION_COORDINATOR_FENCED).
//
// With an authorizer (az; nil allows everything) it needs ClusterAction on
// the cluster, else every partition is CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz"
	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/kafka"
)

// Marker is the end of one producer's transaction on one partition.
type Marker struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool
	// TransactionVersion is the transaction's version (v2 of the request):
	// 2 for transactions v2, 0 when the request does not say.
	TransactionVersion int8
}

// MarkerLog is the partition leader's side of WriteTxnMarkers: the node's
// local leader replicas.
type MarkerLog interface {
	// AppendMarker appends m to this node's leader replica of tp and
	// waits until it is committed (acks=all). Its error wraps
	// partition's sentinels.
	AppendMarker(ctx context.Context, tp TopicPartition, m Marker) error
}

// OffsetsCompletion is told of each marker committed to a
// __consumer_offsets partition: the group coordinator, which applies or
// drops the producer's pending transactional offsets.
type OffsetsCompletion interface {
	CompleteTxn(offsetsPartition int32, producerID int64, commit bool)
}

// RegisterWriteTxnMarkers serves WriteTxnMarkers on reg. groups may be nil.
func RegisterWriteTxnMarkers(reg *kafka.Registry, log MarkerLog, groups OffsetsCompletion, az *authz.Authorizer) {
	reg.Register(kmsg.WriteTxnMarkers, 0, 2, func(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
		r := req.Msg.(*kmsg.WriteTxnMarkersRequest)
		if !az.Authorize(req, acl.OpClusterAction, acl.Cluster) {
			return kafka.Reply{Response: markersRefused(r)}, nil
		}
		return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
			return writeTxnMarkers(ctx, r, log, groups), nil
		}}, nil
	})
}

// markersRefused answers every partition of r CLUSTER_AUTHORIZATION_FAILED.
func markersRefused(r *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse {
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, rm := range r.Markers {
		out := kmsg.NewWriteTxnMarkersResponseMarker()
		out.ProducerID = rm.ProducerID
		for _, t := range rm.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
		resp.Markers = append(resp.Markers, out)
	}
	return resp
}

func writeTxnMarkers(ctx context.Context, r *kmsg.WriteTxnMarkersRequest, log MarkerLog, groups OffsetsCompletion) *kmsg.WriteTxnMarkersResponse {
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	var wg sync.WaitGroup
	for _, rm := range r.Markers {
		m := Marker{ProducerID: rm.ProducerID, ProducerEpoch: rm.ProducerEpoch, CoordinatorEpoch: rm.CoordinatorEpoch, Commit: rm.Committed}
		if r.Version >= 2 {
			m.TransactionVersion = rm.TransactionVersion
		}
		out := kmsg.NewWriteTxnMarkersResponseMarker()
		out.ProducerID = rm.ProducerID
		for _, t := range rm.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			rt.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(t.Partitions))
			out.Topics = append(out.Topics, rt)
		}
		resp.Markers = append(resp.Markers, out)
		mi := len(resp.Markers) - 1
		for ti, t := range rm.Topics {
			for pi, p := range t.Partitions {
				rp := &resp.Markers[mi].Topics[ti].Partitions[pi]
				*rp = kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				tp := TopicPartition{t.Topic, p}
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := log.AppendMarker(ctx, tp, m); err != nil {
						rp.ErrorCode = ErrorCode(err)
						return
					}
					if groups != nil && tp.Topic == coordinator.OffsetsTopic {
						groups.CompleteTxn(tp.Partition, m.ProducerID, m.Commit)
					}
				}()
			}
		}
	}
	wg.Wait()
	return resp
}
