package fetch

// ListOffsets (key 2), versions 0-11.
//
//   - v0: MaxNumOffsets in the request, OldStyleOffsets (a list, descending)
//     in the response, answered as Kafka 3.x answers it (see
//     list_offsets_v0.go). Kafka 4.0 dropped v0 (KIP-896); tools such as
//     Burrow still send it.
//   - v1: one offset per partition.
//   - v2: IsolationLevel: for read_committed (1), LATEST is the last stable
//     offset and a timestamp or MAX_TIMESTAMP answer must lie below it, as
//     Kafka bounds them (lastFetchableOffset); for read_uncommitted, the
//     high watermark.
//   - v4: CurrentLeaderEpoch in the request, LeaderEpoch in the response.
//   - v6: flexible versions.
//   - v7: MAX_TIMESTAMP (-3): the offset of the record with the largest timestamp.
//   - v8: EARLIEST_LOCAL (-4, KIP-405): the first offset on local disk.
//   - v9: LATEST_TIERED (-5, KIP-1005): the last offset in remote segments,
//     -1 when there is none.
//   - v10: TimeoutMs: how long a timestamp lookup may wait on remote
//     segments (0 or less: the node's own bound, listOffsetsRemoteTimeout).
//   - v11: EARLIEST_PENDING_UPLOAD (-6, KIP-1023): on a topic with
//     remote.storage.enable and tiering on, the first offset not yet in
//     remote segments: the one after the last tiered offset (at least the
//     log start), or, while nothing is tiered, the log start; -1 on a topic
//     that is not tiered, as Kafka's UnifiedLog answers it.
//
// A negative timestamp is served only from the version that defines it
// (-1 and -2 from v0, -3 from v7, -4 from v8, -5 from v9, -6 from v11);
// another, or one at an older version, is UNSUPPORTED_VERSION for its
// partition, as Kafka's ReplicaManager answers it.
//
// LATEST (-1) is the high watermark; EARLIEST (-2) the log start offset (the
// remote log start when the partition has remote data); a timestamp finds
// the first offset at or above the log start (never one DeleteRecords or
// retention removed) whose timestamp is at or after it through the remote
// .timeindex objects first (remote data is the older), then the local
// .timeindex, or -1 when there is none below the high watermark.
// MAX_TIMESTAMP looks at local data only.
//
// With an authorizer (WithAuthorizer), each topic needs Describe, else its
// partitions are TOPIC_AUTHORIZATION_FAILED.

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz"
	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafkaerr"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
)

// RegisterListOffsets serves ListOffsets on reg. Options: WithRemote.
func RegisterListOffsets(reg *kafka.Registry, leaders partition.Leaders, log *slog.Logger, opts ...Option) {
	o := buildOptions(opts)
	h := &listOffsetsHandler{leaders: leaders, log: log, remote: o.remote, authz: o.authz}
	reg.Register(kmsg.ListOffsets, 0, 11, h.handle)
}

type listOffsetsHandler struct {
	leaders partition.Leaders
	log     *slog.Logger
	remote  RemoteReader      // nil: local only
	authz   *authz.Authorizer // nil: everything allowed
}

func (h *listOffsetsHandler) handle(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.ListOffsetsRequest)
	if r.Version == 0 {
		return h.handleV0(req, r)
	}
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		allowed := h.authz.Authorize(req, acl.OpDescribe, acl.Topic(t.Topic))
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, -1
			if !allowed {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if !timestampSupported(p.Timestamp, r.Version) {
				rp.ErrorCode = kerr.UnsupportedVersion.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			rep, err := h.leaders.Leader(t.Topic, p.Partition)
			if err == nil && p.CurrentLeaderEpoch >= 0 {
				if code := checkEpoch(p.CurrentLeaderEpoch, rep.LeaderEpoch()); code != 0 {
					rp.ErrorCode = code
					rt.Partitions = append(rt.Partitions, rp)
					continue
				}
			}
			if err != nil {
				rp.ErrorCode = kafkaerr.Code(err)
			} else {
				var err error
				rp.Offset, rp.Timestamp, err = h.lookupOffset(ctx, rep, p.Timestamp, r.IsolationLevel == 1, remoteTimeout(r))
				if err != nil {
					h.log.Error("offset lookup failed", "topic", t.Topic, "partition", p.Partition, "timestamp", p.Timestamp, "err", err)
					rp.ErrorCode = kafkaerr.Code(err)
					rp.Offset, rp.Timestamp = -1, -1
				} else if rp.Offset >= 0 {
					rp.LeaderEpoch = epochAt(rep.Log().Epochs(), rp.Offset)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kafka.Reply{Response: resp}, nil
}

// lookupOffset answers one ListOffsets query: (offset, timestamp). hw is
// the last offset a consumer may fetch up to: the high watermark, or the
// last stable offset when committed (read_committed).
func (h *listOffsetsHandler) lookupOffset(ctx context.Context, rep *partition.Replica, ts int64, committed bool, remoteWait time.Duration) (int64, int64, error) {
	l, hw := rep.Log(), fetchBound(rep, committed)
	topic, p := rep.Topic(), rep.Partition()
	switch ts {
	case -1: // LATEST
		return hw, -1, nil
	case -2: // EARLIEST
		start := l.LogStartOffset()
		if h.remote != nil {
			if rs := h.remote.LogStartOffset(topic, p); rs >= 0 && rs < start {
				start = rs
			}
		}
		return start, -1, nil
	case -4: // EARLIEST_LOCAL
		return l.LogStartOffset(), -1, nil
	case -5: // LATEST_TIERED
		if h.remote == nil {
			return -1, -1, nil
		}
		return h.remote.LastTieredOffset(topic, p), -1, nil
	case -6: // EARLIEST_PENDING_UPLOAD
		return h.earliestPendingUpload(rep), -1, nil
	case -3: // MAX_TIMESTAMP
		return h.maxTimestamp(ctx, rep, hw, remoteWait)
	}
	if h.remote != nil && h.remote.LogStartOffset(topic, p) >= 0 {
		rctx, cancel := context.WithTimeout(ctx, remoteWait)
		off, found, ok, err := h.remote.OffsetForTimestamp(rctx, topic, p, ts)
		cancel()
		if err != nil {
			return -1, -1, err
		}
		if ok && off < hw {
			return off, found, nil
		}
	}
	off, found, ok, err := l.OffsetForTimestamp(ts)
	if err != nil || !ok || off >= hw {
		return -1, -1, err
	}
	return off, found, nil
}

// maxTimestamp answers MAX_TIMESTAMP (KIP-734) over the whole log, remote
// segments included: the first record holding the largest timestamp below
// the bound hw (the high watermark or the last stable offset). When the
// remote segments' largest timestamp is at least the local one, the record
// is the first at that timestamp, found through the remote .timeindex like
// a timestamp query.
func (h *listOffsetsHandler) maxTimestamp(ctx context.Context, rep *partition.Replica, hw int64, remoteWait time.Duration) (int64, int64, error) {
	l := rep.Log()
	off, mts, ok, err := l.MaxTimestampOffset()
	if err != nil {
		return -1, -1, err
	}
	if h.remote != nil {
		if rts, rok := h.remote.MaxTimestamp(rep.Topic(), rep.Partition()); rok && (!ok || rts >= mts) {
			rctx, cancel := context.WithTimeout(ctx, remoteWait)
			roff, found, fok, err := h.remote.OffsetForTimestamp(rctx, rep.Topic(), rep.Partition(), rts)
			cancel()
			if err != nil {
				return -1, -1, err
			}
			if fok && roff < hw {
				return roff, found, nil
			}
		}
	}
	if !ok || off >= hw {
		return -1, -1, nil
	}
	return off, mts, nil
}

// earliestPendingUpload answers EARLIEST_PENDING_UPLOAD (KIP-1023) for
// rep, as Kafka's UnifiedLog.fetchEarliestPendingUploadOffset does: -1 on a
// topic that is not tiered; else the offset after the last tiered one, at
// least the log start; while nothing is tiered, the log start (every offset
// still waits for its upload).
func (h *listOffsetsHandler) earliestPendingUpload(rep *partition.Replica) int64 {
	if h.remote == nil || !rep.Config().Bool(config.RemoteStorageEnable) {
		return -1
	}
	topic, p := rep.Topic(), rep.Partition()
	localStart := rep.Log().LogStartOffset()
	start := localStart
	if rs := h.remote.LogStartOffset(topic, p); rs >= 0 && rs < start {
		start = rs
	}
	last := h.remote.LastTieredOffset(topic, p)
	if last < 0 {
		if localStart != start {
			return -1 // remote data whose end is not known: Kafka answers -1 too
		}
		return start
	}
	return max(last+1, start)
}

// timestampSupported reports whether ListOffsets at version v defines the
// timestamp ts (Kafka's ReplicaManager.timestampMinSupportedVersion; v0 has
// its own handler).
func timestampSupported(ts int64, v int16) bool {
	switch ts {
	case -1, -2: // LATEST, EARLIEST
		return true
	case -3: // MAX_TIMESTAMP
		return v >= 7
	case -4: // EARLIEST_LOCAL
		return v >= 8
	case -5: // LATEST_TIERED
		return v >= 9
	case -6: // EARLIEST_PENDING_UPLOAD
		return v >= 11
	}
	return ts >= 0
}

// remoteTimeout bounds the remote part of a timestamp lookup: the
// request's TimeoutMs from v10, else the node's own bound.
func remoteTimeout(r *kmsg.ListOffsetsRequest) time.Duration {
	if r.Version >= 10 && r.TimeoutMillis > 0 {
		return time.Duration(r.TimeoutMillis) * time.Millisecond
	}
	return listOffsetsRemoteTimeout
}

// fetchBound is the offset a consumer reads below: the high watermark, or
// for read_committed the last stable offset.
func fetchBound(rep *partition.Replica, committed bool) int64 {
	hw := rep.HighWatermark()
	if committed {
		return min(rep.LastStableOffset(), hw)
	}
	return hw
}

// epochAt is the leader epoch of the batch holding offset, from the epoch cache.
func epochAt(epochs []segment.EpochEntry, offset int64) int32 {
	e := int32(-1)
	for _, x := range epochs {
		if x.StartOffset > offset {
			break
		}
		e = x.Epoch
	}
	return e
}
