package group

// Classic members in a KIP-848 consumer group, and the online migration
// between the two protocols (Kafka 4's GroupMetadataManager:
// convertToConsumerGroup, classicGroupJoinToConsumerGroup and the sync,
// heartbeat and leave translations, convertToClassicGroup), under
// group.consumer.migration.policy:
//
//   - Upgrade: a ConsumerGroupHeartbeat joining a classic group of protocol
//     type "consumer" with members turns it into a consumer group. Each
//     classic member stays, with its subscription and assignment decoded
//     from the embedded consumer protocol (ConsumerProtocolSubscription and
//     Assignment), its member epoch the classic generation and its
//     classic session and protocols kept (ClassicMemberMetadata).
//   - A classic member of a consumer group is served through JoinGroup,
//     SyncGroup, Heartbeat and LeaveGroup translated onto the consumer
//     group: its JoinGroup is a heartbeat (subscription and owned
//     partitions from its metadata) answered at once with its member epoch
//     as the generation and no leader; its SyncGroup gets its assigned
//     partitions (never one another member still owns); its Heartbeat
//     answers REBALANCE_IN_PROGRESS while the group epoch is ahead of it,
//     while it must revoke, or once the partitions it waits for are free.
//   - Downgrade: when the last member of the consumer protocol leaves (or
//     is fenced) and classic members remain, the group becomes a classic
//     group at generation = group epoch and rebalances.

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Values of group.consumer.migration.policy (Kafka's
// ConsumerGroupMigrationPolicy); "" is bidirectional, Kafka 4's default.
const (
	MigrationBidirectional = "bidirectional"
	MigrationUpgrade       = "upgrade"
	MigrationDowngrade     = "downgrade"
	MigrationDisabled      = "disabled"
)

// ValidMigrationPolicy reports whether p is a migration policy.
func ValidMigrationPolicy(p string) bool {
	switch p {
	case "", MigrationBidirectional, MigrationUpgrade, MigrationDowngrade, MigrationDisabled:
		return true
	}
	return false
}

func (c *Config) upgradeEnabled() bool {
	p := c.ConsumerMigrationPolicy
	return p == "" || p == MigrationBidirectional || p == MigrationUpgrade
}

func (c *Config) downgradeEnabled() bool {
	p := c.ConsumerMigrationPolicy
	return p == "" || p == MigrationBidirectional || p == MigrationDowngrade
}

// classicMetadata is what a consumer group keeps of a member that speaks
// the classic protocol: Kafka's ClassicMemberMetadata.
type classicMetadata struct {
	sessionTimeoutMs int32
	protocols        []protocol // as in its last JoinGroup, in its order
}

func (c *classicMetadata) equal(o *classicMetadata) bool {
	if c == nil || o == nil {
		return c == o
	}
	return c.sessionTimeoutMs == o.sessionTimeoutMs && slices.EqualFunc(c.protocols, o.protocols, func(a, b protocol) bool {
		return a.name == b.name && string(a.metadata) == string(b.metadata)
	})
}

func (c *classicMetadata) sessionTimeout() time.Duration {
	return time.Duration(c.sessionTimeoutMs) * time.Millisecond
}

// classicTimers are the deadlines of a classic member of a consumer
// group: rejoin after REBALANCE_IN_PROGRESS, sync after a join (Kafka's
// join and sync timeouts, both the rebalance timeout).
type classicTimers struct {
	joinDeadline, syncDeadline time.Time
}

// decodeSubscription decodes a ConsumerProtocolSubscription.
func decodeSubscription(b []byte) (*kmsg.ConsumerMemberMetadata, error) {
	s := kmsg.NewConsumerMemberMetadata()
	if err := s.ReadFrom(b); err != nil {
		return nil, err
	}
	return &s, nil
}

// decodeClassicAssignment decodes a ConsumerProtocolAssignment into topic
// ids; topics v does not know are dropped.
func decodeClassicAssignment(b []byte, v *topicView) (assignment, error) {
	a := assignment{}
	if len(b) == 0 {
		return a, nil
	}
	ca := kmsg.NewConsumerMemberAssignment()
	if err := ca.ReadFrom(b); err != nil {
		return nil, err
	}
	for _, t := range ca.Topics {
		if meta, ok := v.byName[t.Topic]; ok {
			for _, p := range t.Partitions {
				if p >= 0 && p < meta.Partitions {
					a.add(meta.ID, p)
				}
			}
		}
	}
	return a, nil
}

// ownedFromSubscription is a subscription's owned partitions by topic id,
// never nil (a classic member always says what it owns: eager members
// own nothing when they join).
func ownedFromSubscription(s *kmsg.ConsumerMemberMetadata, v *topicView) assignment {
	a := assignment{}
	for _, t := range s.OwnedPartitions {
		if meta, ok := v.byName[t.Topic]; ok {
			a.add(meta.ID, t.Partitions...)
		}
	}
	return a
}

// encodeClassicAssignment is a ConsumerProtocolAssignment of a, in the
// version of the member's subscription (0-3).
func encodeClassicAssignment(a assignment, v *topicView, version int16) []byte {
	ca := kmsg.NewConsumerMemberAssignment()
	ca.Version = min(max(version, 0), 3)
	for _, id := range a.topicIDs() {
		name, ok := v.byID[id]
		if !ok {
			continue
		}
		t := kmsg.NewConsumerMemberAssignmentTopic()
		t.Topic, t.Partitions = name, slices.Clone(a[id])
		ca.Topics = append(ca.Topics, t)
	}
	return ca.AppendTo(nil)
}

// subscriptionVersion is the version of the member's embedded
// subscription (its first protocol's), 0 if unreadable.
func (c *classicMetadata) subscriptionVersion() int16 {
	if len(c.protocols) == 0 || len(c.protocols[0].metadata) < 2 {
		return 0
	}
	b := c.protocols[0].metadata
	return int16(b[0])<<8 | int16(b[1])
}

// upgradeToConsumer turns a classic group of the consumer protocol type
// with members into a consumer group (Kafka's convertToConsumerGroup): the
// classic members stay as members at epoch = generation, their target
// their current assignment. It returns the records: the classic group's
// tombstone, then every record of the new consumer group.
func (g *group) upgradeToConsumer(v *topicView) ([]record, *heartbeatError) {
	switch {
	case !g.limits.upgradeEnabled():
		return nil, hbErr(kerr.GroupIDNotFound, "Group %s is not a consumer group and its online upgrade is disabled.", g.id)
	case g.protocolType != "consumer" || len(g.members) == 0 || g.state == StateDead:
		return nil, hbErr(kerr.GroupIDNotFound, "Group %s is not a consumer group.", g.id)
	}
	cg := newConsumerGroup()
	cg.epoch, cg.assignmentEpoch = g.generation, g.generation
	for _, id := range g.memberIDs() {
		cm := g.members[id]
		md, ok := cm.metadataFor(g.protocol)
		if !ok && len(cm.protocols) > 0 {
			md = cm.protocols[0].metadata
		}
		sub, err := decodeSubscription(md)
		if err != nil {
			return nil, hbErr(kerr.GroupIDNotFound, "Cannot upgrade classic group %s: member %s's subscription: %v.", g.id, id, err)
		}
		assigned, err := decodeClassicAssignment(cm.assignment, v)
		if err != nil {
			return nil, hbErr(kerr.GroupIDNotFound, "Cannot upgrade classic group %s: member %s's assignment: %v.", g.id, id, err)
		}
		ts := slices.Clone(sub.Topics)
		slices.Sort(ts)
		m := &consumerMember{
			id: id, instanceID: cm.instanceID, rackID: sub.Rack, clientID: cm.clientID, clientHost: cm.clientHost,
			subscribedTopics: slices.Compact(ts), rebalanceTimeoutMs: int32(cm.rebalanceTimeout / time.Millisecond),
			epoch: g.generation, previousEpoch: g.generation, state: memberStable,
			assigned: assigned, pendingRevoke: assignment{}, target: assigned.clone(),
			classic: &classicMetadata{sessionTimeoutMs: int32(cm.sessionTimeout / time.Millisecond), protocols: cm.protocols},
		}
		if m.rackID != nil && *m.rackID == "" {
			m.rackID = nil
		}
		m.expiresAt = g.now.Add(cm.sessionTimeout)
		cg.members[id] = m
		if m.instanceID != nil {
			cg.static[*m.instanceID] = id
		}
		cg.setOwnership(m, nil, nil)
	}
	cg.subscription = cg.subscriptionMetadata(v)
	// Held joins and syncs are told to rejoin: the joining member bumps
	// the group epoch anyway.
	for _, m := range g.members {
		for _, w := range []*waiter{m.join, m.sync} {
			if w != nil {
				w.fail(kerr.RebalanceInProgress.Code)
			}
		}
		m.join, m.sync = nil, nil
	}
	recs := append([]record{{key: groupKey(g.id)}}, cg.liveRecords(g.id)...)
	g.members, g.static, g.pending = map[string]*member{}, map[string]string{}, map[string]time.Time{}
	g.protocolType, g.protocol, g.leader, g.generation = "", "", "", 0
	g.rebalanceDeadline, g.syncDeadline = time.Time{}, time.Time{}
	g.setState(StateEmpty)
	g.consumer = cg
	return recs, nil
}

// subscriptionView names the topics of the group's subscription metadata.
func (cg *consumerGroup) subscriptionView() *topicView {
	ts := make([]TopicMeta, 0, len(cg.subscription))
	for _, t := range cg.subscription {
		ts = append(ts, TopicMeta{Name: t.name, ID: t.id, Partitions: t.partitions})
	}
	return newTopicView(ts)
}

// allClassicExcept: every member but id speaks the classic protocol, and
// there is at least one.
func (cg *consumerGroup) allClassicExcept(id string) bool {
	n := 0
	for _, m := range cg.members {
		if m.id == id {
			continue
		}
		if m.classic == nil {
			return false
		}
		n++
	}
	return n > 0
}

// maybeDowngrade turns the consumer group into a classic one when leaving
// (a member of the consumer protocol that leaves or is fenced) was the
// last member of the consumer protocol and classic members remain
// (Kafka's convertToClassicGroup). It returns the records (every consumer
// record's tombstone, then the classic group's metadata) and whether it
// converted; leaving is dropped either way only when it converted.
func (g *group) maybeDowngrade(leaving *consumerMember) ([]record, bool) {
	cg := g.consumer
	if cg == nil || leaving.classic != nil || !cg.allClassicExcept(leaving.id) || !g.limits.downgradeEnabled() {
		return nil, false
	}
	v := cg.subscriptionView() // names the target's topics
	recs := cg.tombstones(g.id)
	g.consumer = nil
	g.generation, g.protocolType = cg.epoch, "consumer"
	g.members, g.static, g.pending = map[string]*member{}, map[string]string{}, map[string]time.Time{}
	for _, id := range cg.memberIDs() {
		m := cg.members[id]
		if id == leaving.id {
			continue
		}
		cm := &member{
			id: id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
			rebalanceTimeout: time.Duration(max(m.rebalanceTimeoutMs, 0)) * time.Millisecond,
			sessionTimeout:   m.classic.sessionTimeout(), protocols: m.classic.protocols,
			assignment: encodeClassicAssignment(m.target, v, m.classic.subscriptionVersion()),
		}
		if cm.rebalanceTimeout <= 0 {
			cm.rebalanceTimeout = cm.sessionTimeout
		}
		g.members[id] = cm
		if cm.instanceID != nil {
			g.static[*cm.instanceID] = id
		}
		g.touch(cm)
	}
	g.protocol = g.selectProtocol()
	g.leader = g.memberIDs()[0]
	g.setState(StateStable)
	recs = append(recs, record{key: groupKey(g.id), value: groupValue(g.metadataValue())})
	g.rebalance() // the members rejoin (Kafka's prepareRebalance after a downgrade)
	return recs, true
}

// classicJoinConsumer applies a JoinGroup of a classic member to a
// consumer group with members (Kafka's classicGroupJoinToConsumerGroup).
// It answers w now, once its records are appended.
func (g *group) classicJoinConsumer(j joinRequest, w *waiter) {
	cg := g.consumer
	resp := w.resp.(*kmsg.JoinGroupResponse)
	fail := func(code int16) {
		resp.ErrorCode = code
		w.send(resp, -1)
	}
	if len(cg.members) >= g.limits.consumerMaxSize() && (j.memberID == "" || cg.members[j.memberID] == nil) {
		fail(kerr.GroupMaxSizeReached.Code) // group.consumer.max.size, as Kafka's throwIfConsumerGroupIsFull
		return
	}
	if j.protocolType != "consumer" || len(j.protocols) == 0 { // whatever the policy, as in Kafka
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	v := j.topics
	if v == nil {
		v = newTopicView(nil)
	}
	sub, err := decodeSubscription(j.protocols[0].metadata)
	if err != nil {
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	memberID := j.memberID
	var recs []record
	if memberID == "" {
		prefix := j.clientID
		if j.instanceID != nil {
			prefix = *j.instanceID
		}
		memberID = newMemberID(prefix)
		if j.version >= 4 && j.instanceID == nil {
			resp.MemberID = memberID
			fail(kerr.MemberIDRequired.Code)
			return
		}
	}
	if j.instanceID != nil {
		if prevID, ok := cg.static[*j.instanceID]; ok && prevID != memberID {
			if j.memberID != "" {
				fail(kerr.FencedInstanceID.Code)
				return
			}
			// A static member back under a new id: the old one is fenced
			// and the new one joins (Kafka keeps the assignment; this
			// rebalances it instead).
			prev := cg.members[prevID]
			if prev == nil {
				delete(cg.static, *j.instanceID)
			} else if prev.classic == nil && g.limits.downgradeEnabled() && cg.allClassicExcept(prevID) {
				fail(kerr.UnreleasedInstanceID.Code) // the last consumer-protocol member: let it leave first
				return
			} else {
				recs = append(recs, g.fenceConsumerMember(prev)...)
			}
		}
	}
	m := cg.members[memberID]
	if m != nil && m.classic == nil {
		fail(kerr.UnknownMemberID.Code) // a member of the consumer protocol
		return
	}
	// An unknown member id joins as a new member, as in Kafka (the id
	// handed out with MEMBER_ID_REQUIRED is not remembered).
	bump := false
	if m == nil {
		m = &consumerMember{id: memberID, assigned: assignment{}, pendingRevoke: assignment{}, target: assignment{}, classic: &classicMetadata{}}
		bump = true
	}
	old := *m
	oldClassic := *m.classic
	old.classic = &oldClassic
	m.instanceID = j.instanceID
	if sub.Rack != nil && *sub.Rack != "" {
		m.rackID = sub.Rack
	}
	m.rebalanceTimeoutMs = int32(j.rebalanceTimeout / time.Millisecond)
	ts := slices.Clone(sub.Topics)
	slices.Sort(ts)
	m.subscribedTopics = slices.Compact(ts)
	m.regex, m.re, m.serverAssignor = nil, nil, nil
	m.clientID, m.clientHost = j.clientID, j.clientHost
	m.classic = &classicMetadata{sessionTimeoutMs: int32(j.sessionTimeout / time.Millisecond), protocols: j.protocols}
	if !slices.Equal(old.subscribedTopics, m.subscribedTopics) {
		bump = true
	}
	if bump || !equalMetadata(old.metadata(), m.metadata()) {
		recs = append(recs, record{key: consumerKey(keyConsumerMemberMetadata, g.id, m.id), value: memberMetadataValue(m.metadata())})
	}
	cg.members[m.id] = m
	if m.instanceID != nil {
		cg.static[*m.instanceID] = m.id
	}
	recs = append(recs, cg.advance(g, v, bump)...)
	recs = append(recs, g.reconcileMember(m, &old, ownedFromSubscription(sub, v))...)
	m.expiresAt = g.now.Add(m.classic.sessionTimeout())
	m.timers.joinDeadline = time.Time{}
	m.timers.syncDeadline = g.now.Add(time.Duration(max(m.rebalanceTimeoutMs, 1)) * time.Millisecond)

	resp.ErrorCode = 0
	resp.MemberID = m.id
	resp.Generation = m.epoch
	resp.ProtocolType = kmsg.StringPtr("consumer")
	resp.Protocol = kmsg.StringPtr(j.protocols[0].name)
	resp.LeaderID, resp.Members, resp.SkipAssignment = "", nil, false
	hw := int64(-1)
	if len(recs) > 0 {
		if hw, err = g.persist(recs); err != nil {
			fail(errorCode(err))
			return
		}
	}
	w.send(resp, hw)
}

// classicMember finds the classic member a request names, or the error
// code to answer (Kafka's validateConsumerGroupMember and
// throwIfMemberDoesNotUseClassicProtocol).
func (cg *consumerGroup) classicMember(memberID string, instanceID *string) (*consumerMember, int16) {
	if instanceID != nil {
		id, ok := cg.static[*instanceID]
		switch {
		case !ok:
			return nil, kerr.UnknownMemberID.Code
		case id != memberID:
			return nil, kerr.FencedInstanceID.Code
		}
	}
	m, ok := cg.members[memberID]
	if !ok || m.classic == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	return m, 0
}

// rejoinAsked marks that m was told REBALANCE_IN_PROGRESS: it must join
// within its rebalance timeout.
func (g *group) rejoinAsked(m *consumerMember) int16 {
	if m.timers.joinDeadline.IsZero() {
		m.timers.joinDeadline = g.now.Add(time.Duration(max(m.rebalanceTimeoutMs, 1)) * time.Millisecond)
	}
	return kerr.RebalanceInProgress.Code
}

// classicSyncConsumer applies a SyncGroup of a classic member of a
// consumer group (Kafka's classicGroupSyncToConsumerGroup): the member
// gets the partitions it is assigned now.
func (g *group) classicSyncConsumer(s syncRequest, w *waiter) {
	cg := g.consumer
	resp := w.resp.(*kmsg.SyncGroupResponse)
	m, code := cg.classicMember(s.memberID, s.instanceID)
	switch {
	case code != 0:
	case s.generation != m.epoch:
		code = kerr.IllegalGeneration.Code
	case s.protocolType != nil && *s.protocolType != "consumer",
		s.protocol != nil && (len(m.classic.protocols) == 0 || *s.protocol != m.classic.protocols[0].name):
		code = kerr.InconsistentGroupProtocol.Code
	case cg.epoch > m.epoch && m.state != memberUnrevoked:
		code = g.rejoinAsked(m)
	}
	if code != 0 {
		resp.ErrorCode = code
		w.send(resp, -1)
		return
	}
	v := s.topics
	if v == nil {
		v = newTopicView(nil)
	}
	m.timers.syncDeadline = time.Time{}
	m.expiresAt = g.now.Add(m.classic.sessionTimeout())
	resp.ErrorCode = 0
	resp.ProtocolType = kmsg.StringPtr("consumer")
	resp.Protocol = kmsg.StringPtr(m.classic.protocols[0].name)
	resp.MemberAssignment = encodeClassicAssignment(m.assigned, v, m.classic.subscriptionVersion())
	w.send(resp, -1)
}

// classicHeartbeatConsumer applies a Heartbeat of a classic member of a
// consumer group (Kafka's classicGroupHeartbeatToConsumerGroup).
func (g *group) classicHeartbeatConsumer(memberID string, instanceID *string, generation int32) int16 {
	cg := g.consumer
	m, code := cg.classicMember(memberID, instanceID)
	switch {
	case code != 0:
		return code
	case generation != m.epoch:
		return kerr.IllegalGeneration.Code
	}
	m.expiresAt = g.now.Add(m.classic.sessionTimeout())
	if m.epoch < cg.epoch || m.state == memberUnrevoked || (m.state == memberUnreleased && !cg.waitingOnUnreleased(m)) {
		return g.rejoinAsked(m)
	}
	return 0
}

// waitingOnUnreleased: some partition of m's target is still owned by
// another member.
func (cg *consumerGroup) waitingOnUnreleased(m *consumerMember) bool {
	for id, ps := range m.target {
		for _, p := range ps {
			if o := cg.ownerOf(id, p); o != "" && o != m.id {
				return true
			}
		}
	}
	return false
}

// classicLeaveConsumer removes classic members of a consumer group
// (Kafka's classicGroupLeaveToConsumerGroup) and returns a code per member
// and the records.
func (g *group) classicLeaveConsumer(ls []leaving) ([]int16, []record) {
	cg := g.consumer
	codes := make([]int16, len(ls))
	var recs []record
	for i, l := range ls {
		id, code := l.member(cg.static)
		if code != 0 {
			codes[i] = code
			continue
		}
		m, ok := cg.members[id]
		if !ok || m.classic == nil {
			codes[i] = kerr.UnknownMemberID.Code
			continue
		}
		recs = append(recs, cg.removeMember(g.id, m)...)
	}
	if len(recs) > 0 {
		cg.epoch++
		recs = append(recs, record{key: consumerKey(keyConsumerGroupMetadata, g.id), value: consumerEpochValue(cg.epoch)})
	}
	return codes, recs
}

// classicExpired: m is a classic member that did not rejoin or sync in
// time (consumerTick fences it).
func (g *group) classicExpired(m *consumerMember) bool {
	if m.classic == nil {
		return false
	}
	for _, d := range []time.Time{m.timers.joinDeadline, m.timers.syncDeadline} {
		if !d.IsZero() && !g.now.Before(d) {
			return true
		}
	}
	return false
}
