package share

// ShareFetch (key 78), versions 1-2 (KIP-932; v2: IsRenewAck, KIP-1222):
// records of share-partitions this node leads, each acquired for the
// member under a lock of group.share.record.lock.duration.ms.
//
//   - Share sessions: epoch 0 opens one (replacing the member's session
//     on this node), then each request carries the next epoch
//     (INVALID_SHARE_SESSION_EPOCH otherwise; SHARE_SESSION_NOT_FOUND for
//     none); Topics add partitions, ForgottenTopicsData remove them; -1
//     closes it, applying its acknowledgements and releasing what the
//     member still holds here.
//   - A session belongs to the connection that opened it: when that
//     connection closes, the member's records here are released at once
//     and the session is gone (a later request with its epoch gets
//     SHARE_SESSION_NOT_FOUND and the member opens a new one), as
//     Kafka's share session cache does on a disconnect.
//   - Piggybacked AcknowledgementBatches are applied first (one type for
//     the range, or one per offset; 0 gap, 1 accept, 2 release, 3 reject,
//     4 renew); a failure is the partition's AcknowledgeErrorCode
//     (INVALID_RECORD_STATE for records the member does not hold).
//   - Each session partition is read from its first Available offset: the
//     local log, or the remote segments (the cold read path of Fetch) for
//     offsets below the local log start. Whole batches are returned with
//     AcquiredRecords naming the offsets acquired and their delivery
//     counts; at most MaxRecords records, PartitionMaxBytes per partition.
//     A record at group.share.delivery.count.limit is archived instead.
//   - Isolation (the group's share.isolation.level, as it is at each
//     fetch): read_uncommitted reads below the high watermark;
//     read_committed below the last stable offset, and the data batches
//     of aborted transactions (the local or remote transaction indexes,
//     as a read_committed Fetch gets them) are archived as they are read,
//     never acquired, so the start offset passes them. Control batches
//     are acquired in either mode, as Kafka does: the consumer delivers
//     no control record and acknowledges their offsets as gaps.
//   - Nothing acquired: the request waits up to MaxWaitMillis for new
//     records, released records or an expired lock.
//   - v2 IsRenewAck: only the acknowledgements are applied, nothing is
//     fetched.
//   - The state is persisted (Persister) before the answer.
//
// With an authorizer it needs Read on the group and on each topic.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafkaerr"
	"github.com/shale-io/shale/partition"
)

// Register serves ShareFetch and ShareAcknowledge on reg.
func (m *Manager) Register(reg *kafka.Registry) {
	reg.Register(kmsg.ShareFetch, 1, 2, m.handleShareFetch)
	reg.Register(kmsg.ShareAcknowledge, 1, 2, m.handleShareAcknowledge)
}

// ackBatch is one acknowledgement batch of a request.
type ackBatch struct {
	first, last int64
	types       []int8
}

// applyAcks applies member's acknowledgements to one share-partition.
// REQUIRES: m.mu held.
func applyAcks(st *Partition, member string, nowMs int64, acks []ackBatch, allowRenew bool) error {
	for _, a := range acks {
		if len(a.types) == 0 || (len(a.types) != 1 && int64(len(a.types)) != a.last-a.first+1) || a.last < a.first {
			return ErrInvalidAck
		}
		for i, t := range a.types {
			if AckType(t) == AckRenew && !allowRenew {
				return ErrInvalidAck
			}
			first, last := a.first, a.last
			if len(a.types) > 1 {
				first, last = a.first+int64(i), a.first+int64(i)
			}
			if err := st.Acknowledge(member, nowMs, first, last, AckType(t)); err != nil {
				return err
			}
		}
	}
	return nil
}

// shareErrCode is the Kafka error code of a share-partition failure: the
// share coordinator out of reach is COORDINATOR_NOT_AVAILABLE (retriable).
func shareErrCode(err error) int16 {
	if errors.Is(err, ErrStateUnavailable) || errors.Is(err, ErrNotCoordinator) || errors.Is(err, ErrFencedStateEpoch) {
		return kerr.CoordinatorNotAvailable.Code
	}
	return kafkaerr.Code(err)
}

func ackCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrInvalidRecordState):
		return kerr.InvalidRecordState.Code
	case errors.Is(err, ErrInvalidAck):
		return kerr.InvalidRequest.Code
	}
	return shareErrCode(err)
}

// sessionFor checks and advances member's share session for epoch.
// REQUIRES: m.mu held.
func (m *Manager) sessionForLocked(k sessionKey, epoch int32, open bool) (*session, int16) {
	s := m.mu.sessions[k]
	switch {
	case epoch == 0 && open:
		m.dropSessionLocked(k)
		s = &session{next: 1, parts: map[tidp]struct{}{}}
		m.mu.sessions[k] = s
		return s, 0
	case epoch == 0:
		return nil, kerr.InvalidShareSessionEpoch.Code
	case s == nil:
		return nil, kerr.ShareSessionNotFound.Code
	case epoch == -1:
		return s, 0
	case epoch != s.next:
		return nil, kerr.InvalidShareSessionEpoch.Code
	}
	s.next++
	if s.next < 1 {
		s.next = 1
	}
	return s, 0
}

type fetchPart struct {
	topic   string
	id      [16]byte
	p       int32
	max     int32
	acks    []ackBatch
	rep     *partition.Replica
	sp      *sharePartition
	ackErr  int16
	errCode int16
	records []byte
	ranges  []AcquiredRange
}

// checkMember is what ShareFetch and ShareAcknowledge check first: it
// returns the request's group and member ids (nil as ""), the group's
// acquisition lock timeout, which the response carries either way, and
// the error code that answers the request at once: GROUP_AUTHORIZATION_FAILED
// without Read on the group, INVALID_REQUEST without a group or a member id
// or with a member id longer than 36; 0 lets it on.
func (m *Manager) checkMember(req *kafka.Request, groupID, memberID *string) (group, member string, lockMs int32, code int16) {
	if groupID != nil {
		group = *groupID
	}
	if memberID != nil {
		member = *memberID
	}
	lockMs = int32(m.cfg.group(group).limits.LockDurationMs)
	switch {
	case !m.cfg.Authorizer.Authorize(req, acl.OpRead, acl.Group(group)):
		code = kerr.GroupAuthorizationFailed.Code
	case group == "" || member == "" || len(member) > 36:
		code = kerr.InvalidRequest.Code
	}
	return group, member, lockMs, code
}

func (m *Manager) handleShareFetch(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.ShareFetchRequest)
	resp := r.ResponseKind().(*kmsg.ShareFetchResponse)
	group, member, lockMs, code := m.checkMember(req, r.GroupID, r.MemberID)
	resp.AcquisitionLockTimeoutMillis = lockMs
	if code != 0 {
		resp.ErrorCode = code
		return kafka.Reply{Response: resp}, nil
	}
	renewOnly := r.Version >= 2 && r.IsRenewAck
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		m.expireAll(time.Now().UnixMilli())
		sk := sessionKey{group, member}
		// Partitions named in this request (with their acks) and, after
		// the session update, every partition of the session.
		named := map[tidp]*fetchPart{}
		var order []*fetchPart
		add := func(id [16]byte, p int32, maxBytes int32) *fetchPart {
			k := tidp{id, p}
			if fp := named[k]; fp != nil {
				return fp
			}
			fp := &fetchPart{id: id, p: p, max: maxBytes}
			named[k] = fp
			order = append(order, fp)
			return fp
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				fp := add(t.TopicID, p.Partition, p.PartitionMaxBytes)
				for _, b := range p.AcknowledgementBatches {
					fp.acks = append(fp.acks, ackBatch{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes})
				}
			}
		}
		m.mu.Lock()
		s, code := m.sessionForLocked(sk, r.ShareSessionEpoch, true)
		if code != 0 {
			m.mu.Unlock()
			resp.ErrorCode = code
			return resp, nil
		}
		if r.ShareSessionEpoch == 0 {
			m.bindSessionLocked(ctx, sk, s)
		}
		if r.ShareSessionEpoch != -1 && !renewOnly {
			for k := range named {
				s.parts[k] = struct{}{}
			}
			for _, f := range r.ForgottenTopicsData {
				for _, p := range f.Partitions {
					delete(s.parts, tidp{f.TopicID, p})
				}
			}
			for k := range s.parts {
				add(k.id, k.p, r.MaxBytes)
			}
		}
		m.mu.Unlock()

		// Resolve and apply acknowledgements.
		now := time.Now().UnixMilli()
		for _, fp := range order {
			m.resolve(ctx, req, group, fp)
			if len(fp.acks) == 0 {
				continue
			}
			if fp.errCode != 0 {
				fp.ackErr = fp.errCode
				continue
			}
			m.mu.Lock()
			err := applyAcks(fp.sp.st, member, now, fp.acks, r.Version >= 2)
			m.wakeLocked()
			m.mu.Unlock()
			fp.ackErr = ackCode(err)
		}
		if r.ShareSessionEpoch == -1 {
			m.ReleaseMember(group, member) // and closes the session
		}
		if r.ShareSessionEpoch != -1 && !renewOnly {
			m.acquireAll(ctx, req.Draining(), member, r, order)
		}
		for _, fp := range order {
			if fp.sp != nil {
				if err := m.persist(ctx, fp.sp); err != nil {
					m.cfg.Logger.Warn("share state not persisted", "group", group, "topic", fp.topic, "partition", fp.p, "err", err)
					if fp.ackErr == 0 && len(fp.acks) > 0 {
						fp.ackErr = shareErrCode(err)
					}
				}
			}
		}
		resp.Topics = nil
		idx := map[[16]byte]int{}
		for _, fp := range order {
			i, ok := idx[fp.id]
			if !ok {
				i = len(resp.Topics)
				idx[fp.id] = i
				t := kmsg.NewShareFetchResponseTopic()
				t.TopicID = fp.id
				resp.Topics = append(resp.Topics, t)
			}
			rp := kmsg.NewShareFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.AcknowledgeErrorCode = fp.p, fp.errCode, fp.ackErr
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			if fp.errCode == kerr.NotLeaderForPartition.Code && m.dir != nil {
				if h, ok := m.dir.CurrentLeader(fp.topic, fp.p, req.ListenerName()); ok {
					rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = h.Leader, h.LeaderEpoch
					if h.Endpoint != nil {
						addEndpoint(resp, h.Endpoint)
					}
				}
			}
			rp.Records = fp.records
			for _, a := range fp.ranges {
				ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
				ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.First, a.Last, a.DeliveryCount
				rp.AcquiredRecords = append(rp.AcquiredRecords, ar)
			}
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
		}
		return resp, nil
	}}, nil
}

func addEndpoint(resp *kmsg.ShareFetchResponse, e *partition.NodeEndpoint) {
	for _, have := range resp.NodeEndpoints {
		if have.NodeID == e.NodeID {
			return
		}
	}
	ne := kmsg.NewShareFetchResponseNodeEndpoint()
	ne.NodeID, ne.Host, ne.Port, ne.Rack = e.NodeID, e.Host, e.Port, e.Rack
	resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
}

// resolve finds fp's topic, leader replica and share-partition state, or
// sets its error code.
func (m *Manager) resolve(ctx context.Context, req *kafka.Request, group string, fp *fetchPart) {
	if fp.sp != nil || fp.errCode != 0 {
		return
	}
	name, ok := m.dir.TopicName(fp.id)
	if !ok {
		fp.errCode = kerr.UnknownTopicID.Code
		return
	}
	fp.topic = name
	if !m.cfg.Authorizer.Authorize(req, acl.OpRead, acl.Topic(name)) {
		fp.errCode = kerr.TopicAuthorizationFailed.Code
		return
	}
	rep, err := m.leaders.Leader(name, fp.p)
	if err != nil {
		fp.errCode = shareErrCode(err)
		return
	}
	sp, err := m.partition(ctx, group, name, fp.p, fp.id, rep)
	if err != nil {
		fp.errCode = shareErrCode(err)
		return
	}
	fp.rep, fp.sp = rep, sp
}

// acquireAll reads and acquires records for the session's partitions,
// waiting up to MaxWaitMillis while nothing can be acquired.
func (m *Manager) acquireAll(ctx context.Context, drain <-chan struct{}, member string, r *kmsg.ShareFetchRequest, parts []*fetchPart) {
	deadline := time.Now().Add(time.Duration(max(r.MaxWaitMillis, 0)) * time.Millisecond)
	maxRecords := int(r.MaxRecords)
	if maxRecords <= 0 {
		maxRecords = 500
	}
	for {
		m.mu.Lock()
		wake := m.mu.released
		m.mu.Unlock()
		var waits []<-chan struct{}
		progressed := false
		total, budget := 0, int(r.MaxBytes)
		if budget <= 0 {
			budget = 1 << 30
		}
		for _, fp := range parts {
			if fp.sp == nil || total >= maxRecords {
				continue
			}
			waits = append(waits, fp.rep.HWChanged())
			n, skipped := m.acquireOne(ctx, member, fp, maxRecords-total, min(budget, int(max(fp.max, 1))))
			total += n
			budget -= len(fp.records)
			progressed = progressed || skipped
		}
		if total > 0 || ctx.Err() != nil {
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		if progressed {
			// Only aborted records were read: read on from past them
			// at once.
			continue
		}
		if exp, ok := m.nextExpiry(); ok {
			left = min(left, max(time.Until(exp), time.Millisecond))
		}
		t := time.NewTimer(left)
		cases := append(waits, wake, drain)
		waitAny(ctx, cases, t.C)
		t.Stop()
		m.expireAll(time.Now().UnixMilli())
		select {
		case <-drain:
			return // the server is stopping: answer with what there is
		default:
		}
	}
}

// waitAny returns when one of chans is closed, timeout fires or ctx ends.
func waitAny(ctx context.Context, chans []<-chan struct{}, timeout <-chan time.Time) {
	done := make(chan struct{})
	defer close(done)
	hit := make(chan struct{}, 1)
	for _, c := range chans {
		go func(c <-chan struct{}) {
			select {
			case <-c:
				select {
				case hit <- struct{}{}:
				default:
				}
			case <-done:
			}
		}(c)
	}
	select {
	case <-hit:
	case <-timeout:
	case <-ctx.Done():
	}
}

// acquireOne reads one partition from its first available offset and
// acquires what it read, keeping the batches that hold acquired records.
// For a read_committed group (share.isolation.level, as the group's
// configs are at this call) the read stops at the last stable offset and
// the data batches of aborted transactions are archived, never acquired.
// It returns the records acquired, and whether it archived any (the next
// read starts past them).
func (m *Manager) acquireOne(ctx context.Context, member string, fp *fetchPart, maxRecords, maxBytes int) (int, bool) {
	readCommitted := m.cfg.group(fp.sp.key.Group).readCommitted
	m.mu.Lock()
	fp.sp.st.AdvanceLogStart(fp.rep.LogStartOffset())
	from, ok := fp.sp.st.NextFetchOffset()
	m.mu.Unlock()
	if !ok {
		return 0, false
	}
	bound := fp.rep.HighWatermark()
	if readCommitted {
		bound = min(fp.rep.LastStableOffset(), bound)
	}
	data, upTo, cold, err := m.readFrom(ctx, fp.rep, fp.topic, fp.p, from, bound, maxBytes)
	if err != nil {
		m.cfg.Logger.Warn("share fetch read failed", "topic", fp.topic, "partition", fp.p, "offset", from, "err", err)
		fp.errCode = shareErrCode(err)
		return 0, false
	}
	if upTo <= from {
		return 0, false
	}
	bs, err := spans(data)
	if err != nil || len(bs) == 0 {
		return 0, false
	}
	// A transaction's first batch starts at the last stable offset, so
	// the bound falls between batches.
	for len(bs) > 0 && bs[len(bs)-1].base >= bound {
		bs = bs[:len(bs)-1]
	}
	if len(bs) == 0 {
		return 0, false
	}
	upTo = min(upTo, bs[len(bs)-1].last+1, bound)
	var abortedSpans []batchSpan
	if readCommitted {
		txns, err := m.abortedTxns(ctx, fp.rep, fp.topic, fp.p, from, upTo, cold)
		if err != nil {
			m.cfg.Logger.Warn("share fetch: aborted transactions not read", "topic", fp.topic, "partition", fp.p, "offset", from, "err", err)
			fp.errCode = shareErrCode(err)
			return 0, false
		}
		abortedSpans = abortedBatches(data, bs, txns)
	}
	m.mu.Lock()
	archived := 0
	for _, b := range abortedSpans {
		archived += fp.sp.st.Archive(b.base, b.last)
	}
	ranges := fp.sp.st.Acquire(member, time.Now().UnixMilli(), from, upTo, maxRecords)
	m.mu.Unlock()
	if len(ranges) == 0 {
		return 0, archived > 0
	}
	var out []byte
	n := 0
	for _, a := range ranges {
		n += int(a.Last - a.First + 1)
	}
	for _, b := range bs {
		for _, a := range ranges {
			if a.First <= b.last && a.Last >= b.base {
				out = append(out, data[b.start:b.end]...)
				break
			}
		}
	}
	fp.records = append(fp.records, out...)
	fp.ranges = append(fp.ranges, ranges...)
	return n, archived > 0
}
