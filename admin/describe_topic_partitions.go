package admin

// DescribeTopicPartitions (key 75), version 0.
//
// Kafka 4's kafka-topics.sh --describe and its Admin client's describeTopics
// (KIP-966) ask this rather than Metadata: the partitions of the topics
// named, or of every topic when none is named, in topic name order, at most
// ResponsePartitionLimit partitions in one answer (bounded by 1 and Kafka's
// max.request.partition.size.limit default, 2000). When the limit cuts the
// answer short, NextCursor names the topic and partition to ask from next;
// a request's Cursor starts there (topics before it are left out, and the
// cursor's topic starts at its partition), as Kafka's
// DescribeTopicPartitionsRequestHandler does:
//
//   - A cursor whose topic is not among the topics named, or whose
//     partition is negative, fails the request: every topic named is
//     INVALID_REQUEST.
//   - A topic named that does not exist is UNKNOWN_TOPIC_OR_PARTITION
//     (INVALID_TOPIC_EXCEPTION when its name is not a valid topic name),
//     and takes no room under the limit; one named without Describe on it
//     is TOPIC_AUTHORIZATION_FAILED, with no topic id, after the others.
//     The all-topics form leaves out what it may not describe, quietly.
//   - A leader that is not registered, or has no endpoint on the client's
//     listener, is -1; replicas not registered are offline.
//   - EligibleLeaderReplicas is the partition's ELR (KIP-966,
//     controlplane/eligibility.go). Shale keeps no LastKnownElr, so that
//     is an empty list, as Kafka answers it with ELR off.
//   - TopicAuthorizedOperations (KIP-430) is answered for every topic
//     described.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/kafka"
)

// maxDescribePartitions is Kafka's max.request.partition.size.limit
// default: the most partitions one DescribeTopicPartitions answer holds.
const maxDescribePartitions = 2000

func (h *Handlers) handleDescribeTopicPartitions(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.DescribeTopicPartitionsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)

	fetchAll := len(r.Topics) == 0
	cursorTopic := ""
	if r.Cursor != nil {
		cursorTopic = r.Cursor.Topic
	}
	var names []string
	if fetchAll {
		for _, t := range h.store.Topics() {
			if t.Name >= cursorTopic {
				names = append(names, t.Name)
			}
		}
	} else {
		for _, rt := range r.Topics {
			if rt.Topic >= cursorTopic {
				names = append(names, rt.Topic)
			}
		}
		slices.Sort(names)
		names = slices.Compact(names)
		if r.Cursor != nil && !slices.Contains(names, r.Cursor.Topic) {
			return h.describeTopicPartitionsInvalid(r, resp), nil
		}
	}
	if r.Cursor != nil && r.Cursor.Partition < 0 {
		return h.describeTopicPartitionsInvalid(r, resp), nil
	}

	var authorized []string
	var denied []kmsg.DescribeTopicPartitionsResponseTopic
	for _, name := range names {
		switch {
		case fetchAll && h.authz.Permits(req, acl.OpDescribe, acl.Topic(name)):
			authorized = append(authorized, name)
		case fetchAll:
		case h.authz.Authorize(req, acl.OpDescribe, acl.Topic(name)):
			authorized = append(authorized, name)
		default:
			t := kmsg.NewDescribeTopicPartitionsResponseTopic()
			topic := name
			t.Topic, t.ErrorCode = &topic, kerr.TopicAuthorizationFailed.Code
			denied = append(denied, t)
		}
	}

	registered, listed := map[int32]bool{}, map[int32]bool{}
	for _, b := range h.store.Brokers() {
		registered[b.NodeID] = true
		if _, _, ok := kafka.AdvertisedAddr(b.Listeners, req.ListenerName(), b.Host, b.Port); ok {
			listed[b.NodeID] = true
		}
	}
	remaining := max(min(int(r.ResponsePartitionLimit), maxDescribePartitions), 1)
	for _, name := range authorized {
		if remaining == 0 {
			// The cursor points at the start of the next topic, which may
			// or may not exist, as Kafka's does.
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			break
		}
		topic := name
		mt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		mt.Topic = &topic
		t, ok := h.store.Topic(name)
		if !ok {
			if fetchAll {
				continue // deleted since listed
			}
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if err := controlplane.ValidateTopicName(name); err != nil {
				mt.ErrorCode = kerr.InvalidTopicException.Code
			}
			mt.IsInternal = internalTopic(name)
			mt.AuthorizedOperations = h.authz.AuthorizedOperations(req, acl.Topic(name))
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		mt.TopicID, mt.IsInternal = t.ID, t.Internal
		mt.AuthorizedOperations = h.authz.AuthorizedOperations(req, acl.Topic(name))
		start := int32(0)
		if name == cursorTopic {
			start = r.Cursor.Partition
		}
		parts := h.store.Partitions(name)
		next := int32(-1)
		for _, st := range parts {
			if st.Partition < start {
				continue
			}
			if len(mt.Partitions) == remaining {
				next = st.Partition
				break
			}
			mt.Partitions = append(mt.Partitions, describedPartition(st, registered, listed))
		}
		resp.Topics = append(resp.Topics, mt)
		if next >= 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: next}
			break
		}
		remaining -= len(mt.Partitions)
	}
	resp.Topics = append(resp.Topics, denied...)
	return kafka.Reply{Response: resp}, nil
}

// describeTopicPartitionsInvalid is Kafka's answer to a request it throws
// InvalidRequestException on: every topic named, INVALID_REQUEST.
func (h *Handlers) describeTopicPartitionsInvalid(r *kmsg.DescribeTopicPartitionsRequest, resp *kmsg.DescribeTopicPartitionsResponse) kafka.Reply {
	for _, rt := range r.Topics {
		t := kmsg.NewDescribeTopicPartitionsResponseTopic()
		topic := rt.Topic
		t.Topic, t.ErrorCode = &topic, kerr.InvalidRequest.Code
		resp.Topics = append(resp.Topics, t)
	}
	return kafka.Reply{Response: resp}
}

// describedPartition is partition st as DescribeTopicPartitions answers it,
// given the registered brokers and those with the client's listener.
func describedPartition(st controlplane.PartitionState, registered, listed map[int32]bool) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	p := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	p.Partition, p.LeaderID, p.LeaderEpoch = st.Partition, st.Leader, st.LeaderEpoch
	if st.Leader < 0 || !registered[st.Leader] || !listed[st.Leader] {
		p.LeaderID = -1
	}
	p.Replicas = slices.Clone(st.Replicas)
	p.ISR = slices.Clone(st.ISR)
	p.EligibleLeaderReplicas = append([]int32{}, st.ELR...)
	p.LastKnownELR = []int32{}
	p.OfflineReplicas = []int32{}
	for _, id := range st.Replicas {
		if !registered[id] {
			p.OfflineReplicas = append(p.OfflineReplicas, id)
		}
	}
	return p
}
