package fetch

// ListOffsets (key 2), versions 1-8.
//
//   - v1: one offset per partition (the v0 multi-offset form is not served).
//   - v2: IsolationLevel (the same answer: no transactions).
//   - v4: CurrentLeaderEpoch in the request, LeaderEpoch in the response.
//   - v6: flexible versions.
//   - v7: MAX_TIMESTAMP (-3): the offset of the record with the largest timestamp.
//   - v8: EARLIEST_LOCAL (-4, KIP-405): the first offset on local disk.
//
// LATEST (-1) is the high watermark; EARLIEST (-2) the log start offset; a
// timestamp finds the first offset whose timestamp is at or after it through
// the .timeindex, or -1 when there is none below the high watermark.

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/ingest"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
)

// RegisterListOffsets serves ListOffsets on reg.
func RegisterListOffsets(reg *ingest.Registry, leaders ingest.Leaders, log *slog.Logger) {
	reg.Register(2, 1, 8, func(ctx context.Context, req *ingest.Request) (ingest.Reply, error) {
		r := req.Msg.(*kmsg.ListOffsetsRequest)
		resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition = p.Partition
				rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, -1
				rep, err := leaders.Leader(t.Topic, p.Partition)
				if err == nil && p.CurrentLeaderEpoch >= 0 {
					if code := checkEpoch(p.CurrentLeaderEpoch, rep.LeaderEpoch()); code != 0 {
						rp.ErrorCode = code
						rt.Partitions = append(rt.Partitions, rp)
						continue
					}
				}
				if err != nil {
					rp.ErrorCode = ingest.ErrorCode(err)
				} else {
					var err error
					rp.Offset, rp.Timestamp, err = lookupOffset(rep, p.Timestamp)
					if err != nil {
						log.Error("offset lookup failed", "topic", t.Topic, "partition", p.Partition, "timestamp", p.Timestamp, "err", err)
						rp.ErrorCode = ingest.ErrorCode(err)
					} else if rp.Offset >= 0 {
						rp.LeaderEpoch = epochAt(rep.Log().Epochs(), rp.Offset)
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return ingest.Reply{Response: resp}, nil
	})
}

// lookupOffset answers one ListOffsets query: (offset, timestamp).
func lookupOffset(rep *partition.Replica, ts int64) (int64, int64, error) {
	l, hw := rep.Log(), rep.HighWatermark()
	switch ts {
	case -1: // LATEST
		return hw, -1, nil
	case -2: // EARLIEST
		return l.LogStartOffset(), -1, nil
	case -4: // EARLIEST_LOCAL
		return l.LogStartOffset(), -1, nil
	case -3: // MAX_TIMESTAMP
		off, mts, ok, err := l.MaxTimestampOffset()
		if err != nil || !ok || off >= hw {
			return -1, -1, err
		}
		return off, mts, nil
	}
	off, found, ok, err := l.OffsetForTimestamp(ts)
	if err != nil || !ok || off >= hw {
		return -1, -1, err
	}
	return off, found, nil
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
