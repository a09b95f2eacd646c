package admin

// Metadata (key 3), versions 0-13.
//
//   - v1: ControllerID, IsInternal; an empty topic list means none (null means all).
//   - v2: ClusterID.  v4: AllowAutoTopicCreation.  v5: OfflineReplicas.
//   - v7: LeaderEpoch.  v9: flexible versions.  v10: TopicID.
//   - v12: topics may be named by id alone.
//   - v13: a top-level ErrorCode (KIP-1102), for REBOOTSTRAP_REQUIRED; a
//     node's answer is always about its own cluster, so it is 0.
//
// Unknown topics are created when auto.create.topics.enable is on and the
// request allows it; the answer then already carries the new partitions.
// The internal topics are created with their coordinator's shape, as
// Kafka's AutoTopicCreationManager does (internal_topics.go).
//
// With an authorizer, a topic is described only to a principal with
// Describe on it: the all-topics form leaves the others out, a topic named
// is TOPIC_AUTHORIZATION_FAILED (by id: without its name), whether it
// exists or not. Auto-creation needs Create on the cluster or the topic,
// else the topic is TOPIC_AUTHORIZATION_FAILED. The brokers are listed to
// everyone.
//
// v8+ answer the authorized operations (KIP-430) of each topic described,
// and v8-10 of the cluster, when asked: 0 for the cluster without Describe
// on it, as Kafka.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/kafka"
)

func (h *Handlers) handleMetadata(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.MetadataRequest)
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	registered := map[int32]bool{}
	listed := map[int32]bool{}
	for _, b := range h.store.Brokers() {
		registered[b.NodeID] = true
		host, port, ok := kafka.AdvertisedAddr(b.Listeners, req.ListenerName(), b.Host, b.Port)
		if !ok {
			continue // Kafka lists only the brokers with the client's listener
		}
		listed[b.NodeID] = true
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port = b.NodeID, host, port
		if b.Rack != "" {
			rack := b.Rack
			mb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, mb)
	}
	cid := h.store.ClusterID()
	resp.ClusterID = &cid
	resp.ControllerID = h.reportedController(listed)
	if req.Version >= 8 && req.Version <= 10 && r.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = h.clusterAuthorizedOperations(req)
	}

	var names []string
	created := false
	if r.Topics == nil || (req.Version == 0 && len(r.Topics) == 0) {
		for _, t := range h.store.Topics() {
			if h.authz.Permits(req, acl.OpDescribe, acl.Topic(t.Name)) {
				names = append(names, t.Name)
			}
		}
	} else {
		for _, rt := range r.Topics {
			switch {
			case rt.Topic != nil:
				names = append(names, *rt.Topic)
			case rt.TopicID != [16]byte{}:
				t, ok := h.store.TopicByID(controlplane.TopicID(rt.TopicID))
				if ok && !h.authz.Authorize(req, acl.OpDescribe, acl.Topic(t.Name)) {
					mt := kmsg.NewMetadataResponseTopic()
					mt.TopicID, mt.ErrorCode = rt.TopicID, kerr.TopicAuthorizationFailed.Code
					resp.Topics = append(resp.Topics, mt)
					continue
				}
				if ok {
					names = append(names, t.Name)
				} else {
					mt := kmsg.NewMetadataResponseTopic()
					mt.TopicID, mt.ErrorCode = rt.TopicID, kerr.UnknownTopicID.Code
					resp.Topics = append(resp.Topics, mt)
				}
			}
		}
	}
	autoCreate := h.cfg.AutoCreateTopics && (req.Version < 4 || r.AllowAutoTopicCreation)
	for _, name := range names {
		mt := kmsg.NewMetadataResponseTopic()
		topic := name
		mt.Topic = &topic
		if r.Topics != nil && !h.authz.Authorize(req, acl.OpDescribe, acl.Topic(name)) {
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		t, ok := h.store.Topic(name)
		if !ok && autoCreate && !h.authz.Permits(req, acl.OpCreate, acl.Cluster) &&
			!h.authz.Authorize(req, acl.OpCreate, acl.Topic(name)) {
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if !ok && autoCreate {
			parts, rf, configs := h.cfg.NumPartitions, h.cfg.DefaultReplicationFactor, map[string]string(nil)
			if shape, internal := h.internalTopicShape(name); internal {
				parts, rf, configs = shape.Partitions, shape.ReplicationFactor, shape.Configs
			}
			var err error
			t, err = h.store.CreateTopic(ctx, name, parts, rf, configs)
			if err != nil && !errors.Is(err, controlplane.ErrTopicExists) {
				mt.ErrorCode = adminErrorCode(err)
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			t, ok = h.store.Topic(name)
			created = true
		}
		if !ok {
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if err := controlplane.ValidateTopicName(name); err != nil {
				mt.ErrorCode = kerr.InvalidTopicException.Code
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if created {
			h.reconcile()
		}
		mt.TopicID = t.ID
		mt.IsInternal = t.Internal
		if req.Version >= 8 && r.IncludeTopicAuthorizedOperations {
			mt.AuthorizedOperations = h.authz.AuthorizedOperations(req, acl.Topic(name))
		}
		parts := h.store.PartitionsShared(name)
		mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, 0, len(parts))
		for _, st := range parts {
			mt.Partitions = append(mt.Partitions, partitionMetadata(st, req.Version, registered, listed))
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return kafka.Reply{Response: resp}, nil
}

// partitionMetadata is partition st as Metadata at version v answers it,
// given the registered (live) brokers and those listed in the answer (the
// registered ones with the client's listener). As Kafka's metadata cache:
// a leader that is not listed is no leader (-1) to the client, with
// LEADER_NOT_AVAILABLE when it is not registered (it died and the
// controller has not elected another yet) and, from v6, LISTENER_NOT_FOUND
// when it is registered without the client's listener; replicas that are
// not registered are offline. A client told of a leader that is not among
// the brokers cannot reach it: franz-go fails the produce with "unknown
// broker" after two metadata refreshes, and a transactional producer with
// it, where it should wait for the election.
func partitionMetadata(st controlplane.PartitionState, v int16, registered, listed map[int32]bool) kmsg.MetadataResponseTopicPartition {
	mp := kmsg.NewMetadataResponseTopicPartition()
	mp.Partition, mp.Leader, mp.LeaderEpoch = st.Partition, st.Leader, st.LeaderEpoch
	mp.Replicas, mp.ISR = st.Replicas, st.ISR
	for _, r := range st.Replicas {
		if !registered[r] {
			mp.OfflineReplicas = append(mp.OfflineReplicas, r)
		}
	}
	switch {
	case st.Leader < 0, !registered[st.Leader]:
		mp.Leader, mp.ErrorCode = -1, kerr.LeaderNotAvailable.Code
	case !listed[st.Leader]:
		mp.Leader, mp.ErrorCode = -1, kerr.LeaderNotAvailable.Code
		if v >= 6 {
			mp.ErrorCode = kerr.ListenerNotFound.Code
		}
	}
	return mp
}
