package admin

// DeleteRecords (key 21), versions 0-2.
//
//   - v2: flexible versions.
//
// Moves each partition's log start offset up to the requested offset (-1
// means the high watermark), deleting whole segments below it. An offset
// above the high watermark is OFFSET_OUT_OF_RANGE. On a tiered topic the
// new log start is committed to the remote metadata before anything is
// deleted (tiering.Manager.DeleteRecordsBefore): cold reads, EARLIEST,
// remote retention, followers and later leaders start there. On any other
// topic the answer waits, as Kafka's DelayedDeleteRecords does, until every
// replica on a live broker has moved its log start too (followers send it
// with each fetch; partition.Replica.LowWatermark), so that no later leader
// serves the deleted records again; a partition still waiting after the
// request's timeout_ms is REQUEST_TIMED_OUT (its leader's log start has
// moved; the followers follow on their next fetches).
//
// __consumer_offsets and __transaction_state are INVALID_TOPIC_EXCEPTION,
// as Kafka's ReplicaManager answers: the coordinators' state is not the
// client's to delete (after it, the next coordinator would load nothing).
//
// With an authorizer, each topic needs Delete (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafkaerr"
	"github.com/shale-io/shale/partition"
)

func (h *Handlers) handleDeleteRecords(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.DeleteRecordsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteRecordsResponse)
	var waits []lowWatermarkWait
	for ti, t := range r.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		allowed := h.authz.Authorize(req, acl.OpDelete, acl.Topic(t.Topic))
		for pi, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark = p.Partition, -1
			if !allowed {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if internalTopic(t.Topic) {
				// As Kafka's ReplicaManager: the coordinators' state is
				// not the client's to delete.
				rp.ErrorCode = kerr.InvalidTopicException.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			rep, err := h.replicas.Leader(t.Topic, p.Partition)
			if err == nil {
				off := p.Offset
				if off == -1 {
					off = rep.HighWatermark()
				}
				if h.tiering != nil && h.tiering.InEffect() && rep.Config().Bool(config.RemoteStorageEnable) {
					// Tiered: the new log start goes into the remote metadata first.
					rp.LowWatermark, err = h.tiering.DeleteRecordsBefore(ctx, rep, off)
				} else if _, err = rep.DeleteRecordsBefore(off); err == nil {
					waits = append(waits, lowWatermarkWait{topic: ti, partition: pi, rep: rep, offset: off})
				}
			}
			rp.ErrorCode = kafkaerr.Code(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	h.waitLowWatermarks(ctx, waits, time.Duration(max(r.TimeoutMillis, 0))*time.Millisecond, resp)
	return kafka.Reply{Response: resp}, nil
}

// lowWatermarkWait is one partition of a DeleteRecords whose leader has
// moved its log start to offset and waits for its live followers.
type lowWatermarkWait struct {
	topic, partition int // indexes in the response
	rep              *partition.Replica
	offset           int64
}

// lowWatermarkPoll is how often a DeleteRecords waiting on its followers
// looks again: they report their log start with each fetch, so a few
// fetch rounds.
const lowWatermarkPoll = 20 * time.Millisecond

// waitLowWatermarks fills each waiting partition's answer once its low
// watermark (partition.Replica.LowWatermark over the live brokers) reaches
// its offset, or REQUEST_TIMED_OUT once timeout has passed; a leader lost
// meanwhile answers its error.
func (h *Handlers) waitLowWatermarks(ctx context.Context, waits []lowWatermarkWait, timeout time.Duration, resp *kmsg.DeleteRecordsResponse) {
	if len(waits) == 0 {
		return
	}
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(lowWatermarkPoll)
	defer tick.Stop()
	for {
		live := h.liveBrokers()
		pending := waits[:0]
		for _, w := range waits {
			rp := &resp.Topics[w.topic].Partitions[w.partition]
			low, err := w.rep.LowWatermark(live)
			switch {
			case err != nil:
				rp.ErrorCode = kafkaerr.Code(err)
			case low >= w.offset:
				rp.LowWatermark = low
			default:
				pending = append(pending, w)
			}
		}
		waits = pending
		if len(waits) == 0 {
			return
		}
		if !time.Now().Before(deadline) {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			deadline = time.Now()
		}
	}
	for _, w := range waits {
		rp := &resp.Topics[w.topic].Partitions[w.partition]
		rp.ErrorCode = kerr.RequestTimedOut.Code
		h.logger.Info("DeleteRecords timed out waiting for the followers' log start", "topic", resp.Topics[w.topic].Topic,
			"partition", rp.Partition, "offset", w.offset, "timeout", timeout)
	}
}
