package group

import (
	"regexp"
	"time"
)

// loadedConsumer is what reading __consumer_offsets leaves of one
// consumer group: the last record per key, tombstones applied.
type loadedConsumer struct {
	exists          bool // a live ConsumerGroupMetadata record
	epoch           int32
	assignmentEpoch int32
	subscription    []subscribedTopic
	members         map[string]memberMetadata
	targets         map[string]assignment
	current         map[string]currentAssignment
}

func newLoadedConsumer() *loadedConsumer {
	return &loadedConsumer{members: map[string]memberMetadata{}, targets: map[string]assignment{}, current: map[string]currentAssignment{}}
}

// apply replays one consumer group record (a nil value is a tombstone).
func (lc *loadedConsumer) apply(k decodedKey, value []byte) error {
	var err error
	switch k.kind {
	case kindConsumerGroupMetadata:
		lc.exists = value != nil
		if value != nil {
			lc.epoch, err = decodeConsumerEpochValue(value)
		}
	case kindConsumerPartitionMetadata:
		lc.subscription = nil
		if value != nil {
			lc.subscription, err = decodePartitionMetadataValue(value)
		}
	case kindConsumerTargetMetadata:
		lc.assignmentEpoch = 0
		if value != nil {
			lc.assignmentEpoch, err = decodeConsumerEpochValue(value)
		}
	case kindConsumerMemberMetadata:
		delete(lc.members, k.member)
		if value != nil {
			var m memberMetadata
			if m, err = decodeMemberMetadataValue(value); err == nil {
				lc.members[k.member] = m
			}
		}
	case kindConsumerTargetMember:
		delete(lc.targets, k.member)
		if value != nil {
			var a assignment
			if a, err = decodeTargetMemberValue(value); err == nil {
				lc.targets[k.member] = a
			}
		}
	case kindConsumerCurrentAssignment:
		delete(lc.current, k.member)
		if value != nil {
			var c currentAssignment
			if c, err = decodeCurrentAssignmentValue(value); err == nil {
				lc.current[k.member] = c
			}
		}
	}
	return err
}

// restore rebuilds the live consumer group at now: every member gets a
// fresh session (and, when it was revoking, a fresh rebalance timeout),
// so that those still alive keep heartbeating and the others expire; a
// consumer member's session is the group's (its group config, else the
// node's).
func (lc *loadedConsumer) restore(now time.Time, limits *Config, group string) *consumerGroup {
	session, _ := limits.consumerTimeouts(group)
	cg := newConsumerGroup()
	cg.epoch, cg.assignmentEpoch, cg.subscription = lc.epoch, lc.assignmentEpoch, lc.subscription
	for id, md := range lc.members {
		m := &consumerMember{id: id, instanceID: md.instanceID, rackID: md.rackID, clientID: md.clientID, clientHost: md.clientHost,
			subscribedTopics: md.subscribedTopics, regex: md.subscribedRegex, rebalanceTimeoutMs: md.rebalanceTimeoutMs,
			serverAssignor: md.serverAssignor, assigned: assignment{}, pendingRevoke: assignment{}, target: assignment{}}
		if m.regex != nil {
			m.re, _ = regexp.Compile("^(?:" + *m.regex + ")$") // a regex that does not compile matches nothing
		}
		if t, ok := lc.targets[id]; ok {
			m.target = t
		}
		if c, ok := lc.current[id]; ok {
			m.epoch, m.previousEpoch, m.state, m.assigned, m.pendingRevoke = c.memberEpoch, c.previousEpoch, c.state, c.assigned, c.pendingRevoke
		}
		m.expiresAt = now.Add(session)
		if md.classic != nil {
			m.classic = md.classic
			m.expiresAt = now.Add(md.classic.sessionTimeout())
		}
		if m.state == memberUnrevoked {
			m.revokeDeadline = now.Add(time.Duration(max(m.rebalanceTimeoutMs, 1)) * time.Millisecond)
		}
		cg.members[id] = m
		if m.instanceID != nil {
			cg.static[*m.instanceID] = id
		}
		cg.setOwnership(m, nil, nil)
	}
	return cg
}
