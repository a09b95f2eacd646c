package share

// ShareAcknowledge (key 79), versions 1-2 (KIP-932; v2: IsRenewAck and
// AcquisitionLockTimeoutMillis, KIP-1222): acknowledgements of records
// acquired through ShareFetch on this node, outside a fetch.
//
//   - The share session must exist (SHARE_SESSION_NOT_FOUND) and the
//     request carry its next epoch (INVALID_SHARE_SESSION_EPOCH; 0 is
//     never valid here); -1 applies the acknowledgements, releases what
//     the member still holds here and closes the session.
//   - Each partition's acknowledgements are applied all or nothing per
//     batch: INVALID_RECORD_STATE for records the member does not hold,
//     INVALID_REQUEST for a malformed batch, NOT_LEADER_OR_FOLLOWER when
//     this node does not lead the partition.
//   - The state is persisted (Persister) before the answer.
//
// With an authorizer it needs Read on the group and on each topic.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/kafka"
)

func (m *Manager) handleShareAcknowledge(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.ShareAcknowledgeRequest)
	resp := r.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	group, member, lockMs, code := m.checkMember(req, r.GroupID, r.MemberID)
	resp.AcquisitionLockTimeoutMillis = lockMs
	if code != 0 {
		resp.ErrorCode = code
		return kafka.Reply{Response: resp}, nil
	}
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		m.expireAll(time.Now().UnixMilli())
		sk := sessionKey{group, member}
		m.mu.Lock()
		_, code := m.sessionForLocked(sk, r.ShareSessionEpoch, false)
		m.mu.Unlock()
		if code != 0 {
			resp.ErrorCode = code
			return resp, nil
		}
		now := time.Now().UnixMilli()
		for _, t := range r.Topics {
			rt := kmsg.NewShareAcknowledgeResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				fp := &fetchPart{id: t.TopicID, p: p.Partition}
				for _, b := range p.AcknowledgementBatches {
					fp.acks = append(fp.acks, ackBatch{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes})
				}
				m.resolve(ctx, req, group, fp)
				rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
				rp.Partition = p.Partition
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
				if fp.errCode != 0 {
					rp.ErrorCode = fp.errCode
					rt.Partitions = append(rt.Partitions, rp)
					continue
				}
				m.mu.Lock()
				err := applyAcks(fp.sp.st, member, now, fp.acks, r.Version >= 2)
				m.wakeLocked()
				m.mu.Unlock()
				rp.ErrorCode = ackCode(err)
				if perr := m.persist(ctx, fp.sp); perr != nil && rp.ErrorCode == 0 {
					rp.ErrorCode = shareErrCode(perr)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if r.ShareSessionEpoch == -1 {
			m.ReleaseMember(group, member) // and closes the session
		}
		return resp, nil
	}}, nil
}
