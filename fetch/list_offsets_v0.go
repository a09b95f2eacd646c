package fetch

// ListOffsets v0 (key 2), the multi-offset form Kafka 3.x serves
// (KafkaApis.handleListOffsetRequestV0, UnifiedLog.legacyFetchOffsetsBefore)
// and Kafka 4.0 dropped (KIP-896). Burrow and other old tools send it.
//
// Each partition's answer is OldStyleOffsets, at most MaxNumOffsets offsets
// in descending order, taken from the list of the local segments' base
// offsets (each raised to the log start), each paired with its .log file's
// modification time, followed, when the active segment holds data, by the
// log end offset paired with now:
//
//   - LATEST (-1): from the log end offset down: [LEO, newest bases...].
//   - EARLIEST (-2): one offset, the log start. Kafka 3.x answers the first
//     local segment's base there, even on a tiered topic; Shale answers the
//     log start with remote segments included, as v1 EARLIEST does, so a
//     v0 consumer that seeks to the beginning reads everything retained.
//   - a timestamp: from the newest entry whose time is at or before it
//     down; none is an empty list. The time is the file's, not the
//     records' (v1 and later search the records' timestamps).
//
// For a consumer (ReplicaID -1) an offset above the high watermark is
// replaced by the high watermark, as Kafka does. MaxNumOffsets of 0 or less
// answers an empty list (Kafka 3.x fails a negative one with
// UNKNOWN_SERVER_ERROR). Only the leader answers, also for ReplicaID -2
// (Kafka's debugging replica, which Kafka lets a follower answer).
// Authorization is v1's: Describe on the topic.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafkaerr"
	"github.com/shale-io/shale/partition"
)

func (h *listOffsetsHandler) handleV0(req *kafka.Request, r *kmsg.ListOffsetsRequest) (kafka.Reply, error) {
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		allowed := h.authz.Authorize(req, acl.OpDescribe, acl.Topic(t.Topic))
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, -1
			switch rep, err := h.leaders.Leader(t.Topic, p.Partition); {
			case !allowed:
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case err != nil:
				rp.ErrorCode = kafkaerr.Code(err)
			default:
				rp.OldStyleOffsets = h.oldStyleOffsets(rep, p.Timestamp, p.MaxNumOffsets, r.ReplicaID == -1)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kafka.Reply{Response: resp}, nil
}

// oldStyleOffsets answers one v0 partition; fromConsumer clamps to the
// high watermark. The caller owns the returned slice.
func (h *listOffsetsHandler) oldStyleOffsets(rep *partition.Replica, ts int64, maxNum int32, fromConsumer bool) []int64 {
	l := rep.Log()
	var offs []int64
	if ts == -2 {
		if maxNum > 0 {
			start := l.LogStartOffset()
			if h.remote != nil {
				if rs := h.remote.LogStartOffset(rep.Topic(), rep.Partition()); rs >= 0 && rs < start {
					start = rs
				}
			}
			offs = []int64{start}
		}
	} else {
		var points []offsetTime
		logStart := l.LogStartOffset()
		segs := l.SegmentsModified()
		for _, s := range segs {
			points = append(points, offsetTime{offset: max(s.BaseOffset, logStart), millis: s.LastModified.UnixMilli()})
		}
		if len(segs) > 0 && segs[len(segs)-1].Size > 0 {
			points = append(points, offsetTime{offset: l.LogEndOffset(), millis: time.Now().UnixMilli()})
		}
		offs = offsetsBefore(points, ts, maxNum)
	}
	if !fromConsumer {
		return offs
	}
	return clampToHW(offs, rep.HighWatermark())
}

// offsetTime is one entry of v0's list: an offset and its file time.
type offsetTime struct {
	offset int64
	millis int64
}

// offsetsBefore is UnifiedLog.legacyFetchOffsetsBefore's choice over points
// (in offset order) for LATEST (-1) or a timestamp: up to maxNum offsets,
// descending, from the newest point at or before ts (the last point for
// LATEST).
func offsetsBefore(points []offsetTime, ts int64, maxNum int32) []int64 {
	start := len(points) - 1
	if ts != -1 {
		for start >= 0 && points[start].millis > ts {
			start--
		}
	}
	n := min(int(max(maxNum, 0)), start+1)
	out := make([]int64, 0, n)
	for i := start; i > start-n; i-- {
		out = append(out, points[i].offset)
	}
	// Bases raised to the log start can repeat; Kafka sorts descending and
	// keeps repeats, and so does this.
	return out
}

// clampToHW replaces the offsets above hw (a descending list) with hw, as
// Kafka's Partition.legacyFetchOffsetsForTimestamp does for consumers.
func clampToHW(offs []int64, hw int64) []int64 {
	i := 0
	for i < len(offs) && offs[i] > hw {
		i++
	}
	if i == 0 {
		return offs
	}
	return append([]int64{hw}, offs[i:]...)
}
