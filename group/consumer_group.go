package group

// The KIP-848 consumer group state machine, separate from the classic one
// (state.go) and sharing only the group's committed offsets, its runner
// and its persist hook. Like Kafka's GroupMetadataManager it is driven by
// ConsumerGroupHeartbeat: each heartbeat may update the member's
// subscription (bumping the group epoch), recompute the target assignment
// when the group epoch passed the assignment epoch, and move the member one
// step towards its target (reconcile, consumer_assignment.go). Timers (the
// session of every member, the rebalance timeout of a member asked to
// revoke) fence members in tick. Every change is written to
// __consumer_offsets in Kafka's records (consumer_records.go), and the
// heartbeat is answered once they are replicated.

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memberState is a consumer group member's reconciliation state, with
// Kafka's values (MemberState).
type memberState int8

const (
	memberStable     memberState = 0
	memberUnrevoked  memberState = 1
	memberUnreleased memberState = 2
	memberUnknown    memberState = 127
)

func (s memberState) String() string {
	switch s {
	case memberStable:
		return "STABLE"
	case memberUnrevoked:
		return "UNREVOKED_PARTITIONS"
	case memberUnreleased:
		return "UNRELEASED_PARTITIONS"
	}
	return "UNKNOWN"
}

// Member epochs with a meaning (KIP-848).
const (
	leaveEpoch       = -1 // a member leaves
	staticLeaveEpoch = -2 // a static member leaves for now and keeps its assignment
)

// consumerMember is one member of a consumer group.
type consumerMember struct {
	id                 string
	instanceID, rackID *string
	clientID           string
	clientHost         string
	subscribedTopics   []string // sorted
	regex              *string
	re                 *regexp.Regexp // compiled regex, nil without one
	rebalanceTimeoutMs int32
	serverAssignor     *string

	epoch, previousEpoch int32
	state                memberState
	assigned             assignment // what it owns now
	pendingRevoke        assignment // what it must give up
	target               assignment // its share of the target assignment

	expiresAt      time.Time // its session
	revokeDeadline time.Time // set while it must revoke partitions

	// classic is set for a member that speaks the classic protocol
	// (JoinGroup, SyncGroup, Heartbeat; consumer_classic.go), with its
	// rejoin and sync deadlines.
	classic *classicMetadata
	timers  classicTimers
}

func (m *consumerMember) metadata() memberMetadata {
	return memberMetadata{instanceID: m.instanceID, rackID: m.rackID, clientID: m.clientID, clientHost: m.clientHost,
		subscribedTopics: m.subscribedTopics, subscribedRegex: m.regex, rebalanceTimeoutMs: m.rebalanceTimeoutMs,
		serverAssignor: m.serverAssignor, classic: m.classic}
}

func (m *consumerMember) current() currentAssignment {
	return currentAssignment{memberEpoch: m.epoch, previousEpoch: m.previousEpoch, state: m.state,
		assigned: m.assigned, pendingRevoke: m.pendingRevoke}
}

// tidp names one partition by topic id.
type tidp struct {
	id topicID
	p  int32
}

// consumerGroup is the KIP-848 part of a group.
type consumerGroup struct {
	epoch           int32 // the group epoch
	assignmentEpoch int32 // the epoch of the target assignment
	members         map[string]*consumerMember
	static          map[string]string // instance id -> member id
	subscription    []subscribedTopic // the subscribed topics' metadata the target was computed with, by name
	owners          map[tidp]string   // partition -> member that owns it (assigned or pending revocation)
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{members: map[string]*consumerMember{}, static: map[string]string{}, owners: map[tidp]string{}}
}

// ConsumerGroupState names a consumer group's state as Kafka does.
func (cg *consumerGroup) state() string {
	if len(cg.members) == 0 {
		return "Empty"
	}
	if cg.epoch > cg.assignmentEpoch {
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != staticLeaveEpoch && (m.epoch != cg.assignmentEpoch || m.state != memberStable) {
			return "Reconciling"
		}
	}
	return "Stable"
}

func (cg *consumerGroup) memberIDs() []string {
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (cg *consumerGroup) ownerOf(id topicID, p int32) string { return cg.owners[tidp{id, p}] }

// setOwnership replaces what m owns in the owners map.
func (cg *consumerGroup) setOwnership(m *consumerMember, oldAssigned, oldPending assignment) {
	for _, a := range []assignment{oldAssigned, oldPending} {
		for id, ps := range a {
			for _, p := range ps {
				if cg.owners[tidp{id, p}] == m.id {
					delete(cg.owners, tidp{id, p})
				}
			}
		}
	}
	for _, a := range []assignment{m.assigned, m.pendingRevoke} {
		for id, ps := range a {
			for _, p := range ps {
				cg.owners[tidp{id, p}] = m.id
			}
		}
	}
}

// TopicMeta is a topic as KIP-848's server-side assignors see it.
type TopicMeta struct {
	Name       string
	ID         [16]byte
	Partitions int32
	// Racks holds, per partition, the racks of its replicas; nil when no
	// broker names a rack.
	Racks [][]string
}

// TopicLister is what consumer groups need of the cluster beyond Cluster:
// the topics, to resolve subscriptions and assign partitions. A Cluster
// that does not implement it leaves every subscription empty.
type TopicLister interface {
	TopicsMeta() []TopicMeta
}

// topicView is the cluster's topics at one heartbeat.
type topicView struct {
	byName map[string]TopicMeta
	byID   map[topicID]string
}

func newTopicView(ts []TopicMeta) *topicView {
	v := &topicView{byName: make(map[string]TopicMeta, len(ts)), byID: make(map[topicID]string, len(ts))}
	for _, t := range ts {
		v.byName[t.Name] = t
		v.byID[t.ID] = t.Name
	}
	return v
}

// current reports whether e, an offset of topic, is an offset of the
// topic of that name in v: true unless e names a topic id (KAFKA-19141)
// and the topic of that name now has another. A topic v does not have
// keeps its offsets here (OffsetFetch of a name no topic has answers
// them, as before ids were recorded); they are deleted with the topic
// (deleted_topics.go).
func (v *topicView) current(topic string, e offsetEntry) bool {
	if e.topicID == (topicID{}) {
		return true
	}
	t, ok := v.byName[topic]
	return !ok || t.ID == e.topicID
}

// subscribed is the set of existing topics m subscribes to, by name or by
// its regex (matched against the whole name, as Kafka's RE2J matches()).
func (v *topicView) subscribed(m *consumerMember) map[string]bool {
	out := map[string]bool{}
	for _, t := range m.subscribedTopics {
		if _, ok := v.byName[t]; ok {
			out[t] = true
		}
	}
	if m.re != nil {
		for name := range v.byName {
			if m.re.MatchString(name) {
				out[name] = true
			}
		}
	}
	return out
}

// compileSubscriptionRegex compiles a KIP-848 SubscribedTopicRegex (RE2
// syntax) anchored at both ends.
func compileSubscriptionRegex(s string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + s + ")$")
}

// consumerHeartbeat is a ConsumerGroupHeartbeat's fields, owned by the
// group.
type consumerHeartbeat struct {
	version            int16
	memberID           string
	memberEpoch        int32
	instanceID, rackID *string
	rebalanceTimeoutMs int32
	subscribedTopics   []string // nil: unchanged
	regex              *string  // nil: unchanged
	assignor           *string  // nil: unchanged
	owned              assignment
	clientID           string
	clientHost         string
	topics             *topicView
}

// full: the member sent everything (a join, or a retry after an error).
func (h *consumerHeartbeat) full() bool {
	return h.memberEpoch == 0 || (h.rebalanceTimeoutMs != -1 && (h.subscribedTopics != nil || h.regex != nil) && h.owned != nil)
}

// consumerMaxSize is ConsumerMaxSize, or no bound for a Config without
// its defaults set (a group a test builds by hand).
func (c *Config) consumerMaxSize() int {
	if c.ConsumerMaxSize <= 0 {
		return math.MaxInt32
	}
	return c.ConsumerMaxSize
}

// groupFull is GROUP_MAX_SIZE_REACHED for a member the consumer group
// has no room for (group.consumer.max.size), with Kafka's message.
func (g *group) groupFull() *heartbeatError {
	return hbErr(kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of %d members.", g.limits.consumerMaxSize())
}

// heartbeatError is a heartbeat's error code and message.
type heartbeatError struct {
	code int16
	msg  string
}

func hbErr(e *kerr.Error, format string, args ...any) *heartbeatError {
	return &heartbeatError{code: e.Code, msg: fmt.Sprintf(format, args...)}
}

// validateHeartbeat is Kafka's request validation, before any state.
func validateHeartbeat(group string, h *consumerHeartbeat) *heartbeatError {
	switch {
	case group == "":
		return hbErr(kerr.InvalidRequest, "GroupId can't be empty.")
	case h.version >= 1 && h.memberID == "":
		return hbErr(kerr.InvalidRequest, "MemberId can't be empty.")
	case h.version == 0 && h.memberID == "" && h.memberEpoch != 0:
		return hbErr(kerr.InvalidRequest, "MemberId can't be empty.")
	case h.rackID != nil && *h.rackID == "":
		return hbErr(kerr.InvalidRequest, "RackId can't be empty.")
	case h.instanceID != nil && *h.instanceID == "":
		return hbErr(kerr.InvalidRequest, "InstanceId can't be empty.")
	case h.memberEpoch < staticLeaveEpoch:
		return hbErr(kerr.InvalidRequest, "MemberEpoch is invalid.")
	case h.memberEpoch == 0 && h.rebalanceTimeoutMs == -1:
		return hbErr(kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request.")
	case h.memberEpoch == 0 && h.subscribedTopics == nil && h.regex == nil:
		return hbErr(kerr.InvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
	case h.memberEpoch == 0 && (h.owned == nil || h.owned.count() > 0):
		return hbErr(kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining.")
	case h.assignor != nil && !knownAssignor(*h.assignor):
		return hbErr(kerr.UnsupportedAssignor, "ServerAssignor %s is not supported. Supported assignors: uniform, range.", *h.assignor)
	}
	return nil
}

// consumerHeartbeat applies a ConsumerGroupHeartbeat to g and fills resp;
// it returns the records to append. On an error nothing changed and no
// record is returned, but for an online upgrade of a classic group that
// happened before the error (its records are returned with the error). clientHeartbeat is the interval to tell the member.
func (g *group) consumerHeartbeat(h *consumerHeartbeat, resp *kmsg.ConsumerGroupHeartbeatResponse) ([]record, *heartbeatError) {
	if e := validateHeartbeat(g.id, h); e != nil {
		return nil, e
	}
	var re *regexp.Regexp
	if h.regex != nil && *h.regex != "" {
		var err error
		if re, err = compileSubscriptionRegex(*h.regex); err != nil {
			return nil, hbErr(kerr.InvalidRegularExpression, "SubscribedTopicRegex %q is not a valid RE2 expression: %v", *h.regex, err)
		}
	}
	if g.isShare() {
		return nil, hbErr(kerr.GroupIDNotFound, "Group %s is not a consumer group.", g.id)
	}
	var recs []record
	if g.consumer == nil {
		switch {
		case h.memberEpoch != 0 && len(g.members) > 0:
			return nil, hbErr(kerr.GroupIDNotFound, "Group %s is not a consumer group.", g.id)
		case h.memberEpoch != 0:
			return nil, hbErr(kerr.UnknownMemberID, "Member %s is not a member of group %s.", h.memberID, g.id)
		case len(g.members) > g.limits.consumerMaxSize():
			// Too large to become a consumer group (Kafka's
			// validateOnlineUpgrade).
			return nil, hbErr(kerr.GroupIDNotFound, "Group %s is not a consumer group.", g.id)
		case len(g.members) > 0 && len(g.members) >= g.limits.consumerMaxSize():
			// Upgraded, the group would have no room for the joining
			// member: refused before any conversion, as Kafka's.
			return nil, g.groupFull()
		case len(g.members) > 0:
			// A member of the consumer protocol joins a classic group
			// with members: the online upgrade (consumer_classic.go).
			up, e := g.upgradeToConsumer(h.topics)
			if e != nil {
				return nil, e
			}
			recs = up
		case len(g.pending) > 0:
			return nil, hbErr(kerr.GroupIDNotFound, "Group %s is not a consumer group.", g.id)
		}
	}
	if cg := g.consumer; cg != nil && len(cg.members) >= g.limits.consumerMaxSize() && cg.members[h.memberID] == nil {
		// Kafka's throwIfConsumerGroupIsFull, whatever the epoch.
		return recs, g.groupFull()
	}
	if h.memberEpoch == leaveEpoch || h.memberEpoch == staticLeaveEpoch {
		return g.consumerLeave(h, resp)
	}
	cg := g.consumer
	if cg == nil {
		cg = newConsumerGroup()
		g.consumer = cg
		if g.generation > 0 {
			recs = append(recs, record{key: groupKey(g.id)}) // the empty classic group's metadata is gone
		}
	}
	if h.memberID == "" {
		h.memberID = newMemberID(h.clientID) // version 0: the coordinator names the member
	}
	m, replaced, e := cg.memberFor(h)
	if e != nil {
		return recs, e // an upgrade stands: its records are appended still
	}
	bump := false
	if m == nil {
		m = &consumerMember{id: h.memberID, assigned: assignment{}, pendingRevoke: assignment{}, target: assignment{}}
		bump = replaced == nil
	}
	old := *m
	m.classic, m.timers = nil, classicTimers{} // a classic member rejoining in place with the consumer protocol
	if replaced != nil {
		// A static member back under a new member id takes over the
		// member that left with epoch -2: its subscription and its
		// assignment, without a new group epoch (KIP-848).
		m.subscribedTopics, m.regex, m.re, m.serverAssignor = replaced.subscribedTopics, replaced.regex, replaced.re, replaced.serverAssignor
		m.rackID, m.rebalanceTimeoutMs = replaced.rackID, replaced.rebalanceTimeoutMs
		m.assigned, m.pendingRevoke, m.target = replaced.assigned.clone(), replaced.pendingRevoke.clone(), replaced.target.clone()
		m.state = replaced.state
		old = *m
		recs = append(recs, cg.removeMember(g.id, replaced)...)
		cg.setOwnership(m, nil, nil)
		recs = append(recs, record{key: consumerKey(keyConsumerTargetMember, g.id, m.id), value: targetMemberValue(m.target)})
	}
	// The member's fields from the request (null: unchanged).
	if h.instanceID != nil {
		m.instanceID = h.instanceID
	}
	if h.rackID != nil {
		m.rackID = h.rackID
	}
	if h.rebalanceTimeoutMs > 0 {
		m.rebalanceTimeoutMs = h.rebalanceTimeoutMs
	}
	if h.assignor != nil {
		m.serverAssignor = h.assignor
	}
	if h.subscribedTopics != nil {
		ts := slices.Clone(h.subscribedTopics)
		slices.Sort(ts)
		m.subscribedTopics = slices.Compact(ts)
	}
	if h.regex != nil {
		if *h.regex == "" {
			m.regex, m.re = nil, nil
		} else {
			m.regex, m.re = h.regex, re
		}
	}
	m.clientID, m.clientHost = h.clientID, h.clientHost
	if !slices.Equal(old.subscribedTopics, m.subscribedTopics) || !equalPtr(old.regex, m.regex) {
		bump = true
	}
	if bump || !equalMetadata(old.metadata(), m.metadata()) || replaced != nil {
		recs = append(recs, record{key: consumerKey(keyConsumerMemberMetadata, g.id, m.id), value: memberMetadataValue(m.metadata())})
	}
	cg.members[m.id] = m
	if m.instanceID != nil {
		cg.static[*m.instanceID] = m.id
	}
	recs = append(recs, cg.advance(g, h.topics, bump)...)
	recs = append(recs, g.reconcileMember(m, &old, h.owned)...)
	session, interval := g.limits.consumerTimeouts(g.id)
	m.expiresAt = g.now.Add(session)

	resp.MemberID = kmsg.StringPtr(m.id)
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(interval / time.Millisecond)
	if h.full() || !old.assigned.equal(m.assigned) {
		resp.Assignment = m.assigned.heartbeatAssignment()
	}
	return recs, nil
}

// reconcileMember moves m towards its target and returns the record of
// its new current assignment, if it changed from old.
func (g *group) reconcileMember(m *consumerMember, old *consumerMember, owned assignment) []record {
	cg := g.consumer
	wasUnrevoked := m.state == memberUnrevoked
	prevAssigned, prevPending := m.assigned, m.pendingRevoke
	reconcile(m, m.target, cg.assignmentEpoch, owned, cg.ownerOf)
	cg.setOwnership(m, prevAssigned, prevPending)
	switch {
	case m.state == memberUnrevoked && !wasUnrevoked:
		m.revokeDeadline = g.now.Add(time.Duration(max(m.rebalanceTimeoutMs, 1)) * time.Millisecond)
	case m.state != memberUnrevoked:
		m.revokeDeadline = time.Time{}
	}
	if old.epoch == m.epoch && old.previousEpoch == m.previousEpoch && old.state == m.state &&
		old.assigned.equal(m.assigned) && old.pendingRevoke.equal(m.pendingRevoke) {
		return nil
	}
	return []record{{key: consumerKey(keyConsumerCurrentAssignment, g.id, m.id), value: currentAssignmentValue(m.current())}}
}

// memberFor finds the member a (non-leave) heartbeat is from: nil for a
// new member, and the static member it replaces, if any.
func (cg *consumerGroup) memberFor(h *consumerHeartbeat) (m, replaced *consumerMember, e *heartbeatError) {
	m = cg.members[h.memberID]
	if h.instanceID != nil {
		if prevID, ok := cg.static[*h.instanceID]; ok && prevID != h.memberID {
			prev := cg.members[prevID]
			switch {
			case h.memberEpoch != 0:
				return nil, nil, hbErr(kerr.FencedInstanceID, "Static member %s with instance id %s was replaced by member %s.", h.memberID, *h.instanceID, prevID)
			case prev != nil && prev.epoch != staticLeaveEpoch:
				return nil, nil, hbErr(kerr.UnreleasedInstanceID, "Static member %s with instance id %s is not released yet.", prevID, *h.instanceID)
			case prev != nil && m == nil:
				return nil, prev, nil
			}
		}
	}
	if h.memberEpoch == 0 {
		return m, nil, nil // a join, or a member that lost its state rejoining in place
	}
	if m == nil {
		return nil, nil, hbErr(kerr.UnknownMemberID, "Member %s is not a member of the group.", h.memberID)
	}
	switch {
	case h.memberEpoch == m.epoch:
	case h.memberEpoch < m.epoch && h.memberEpoch == m.previousEpoch && h.owned != nil && isSubset(h.owned, m.assigned):
		// The answer that moved the member on was lost: it retries.
	default:
		return nil, nil, hbErr(kerr.FencedMemberEpoch, "The member epoch %d of member %s is fenced (current %d).", h.memberEpoch, h.memberID, m.epoch)
	}
	if m.state == memberUnknown {
		return nil, nil, hbErr(kerr.FencedMemberEpoch, "Member %s is in an unknown state and must rejoin.", h.memberID)
	}
	return m, nil, nil
}

func isSubset(a, of assignment) bool {
	for id, ps := range a {
		for _, p := range ps {
			if !of.has(id, p) {
				return false
			}
		}
	}
	return true
}

func equalPtr(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func equalMetadata(a, b memberMetadata) bool {
	return equalPtr(a.instanceID, b.instanceID) && equalPtr(a.rackID, b.rackID) && a.clientID == b.clientID &&
		a.clientHost == b.clientHost && slices.Equal(a.subscribedTopics, b.subscribedTopics) &&
		equalPtr(a.subscribedRegex, b.subscribedRegex) && a.rebalanceTimeoutMs == b.rebalanceTimeoutMs &&
		equalPtr(a.serverAssignor, b.serverAssignor) && a.classic.equal(b.classic)
}

// consumerLeave applies a heartbeat with epoch -1 (leave) or -2 (a static
// member leaves for now, keeping its assignment until its session ends).
func (g *group) consumerLeave(h *consumerHeartbeat, resp *kmsg.ConsumerGroupHeartbeatResponse) ([]record, *heartbeatError) {
	cg := g.consumer
	m := cg.members[h.memberID]
	if h.instanceID != nil {
		id, ok := cg.static[*h.instanceID]
		switch {
		case !ok:
			return nil, hbErr(kerr.UnknownMemberID, "Instance id %s is unknown.", *h.instanceID)
		case id != h.memberID:
			return nil, hbErr(kerr.FencedInstanceID, "Instance id %s belongs to member %s.", *h.instanceID, id)
		}
	}
	if m == nil {
		return nil, hbErr(kerr.UnknownMemberID, "Member %s is not a member of the group.", h.memberID)
	}
	if h.memberEpoch == staticLeaveEpoch && m.instanceID == nil {
		// Kafka asks for the instance id in the request; franz-go sends
		// only the member id, which names the static member as well.
		return nil, hbErr(kerr.InvalidRequest, "Member %s has no instance id to leave with epoch -2.", m.id)
	}
	resp.MemberID = kmsg.StringPtr(m.id)
	resp.MemberEpoch = h.memberEpoch
	session, interval := g.limits.consumerTimeouts(g.id)
	resp.HeartbeatIntervalMillis = int32(interval / time.Millisecond)
	if h.memberEpoch == staticLeaveEpoch {
		m.setEpoch(staticLeaveEpoch)
		m.revokeDeadline = time.Time{}
		m.expiresAt = g.now.Add(session)
		return []record{{key: consumerKey(keyConsumerCurrentAssignment, g.id, m.id), value: currentAssignmentValue(m.current())}}, nil
	}
	return g.fenceConsumerMember(m), nil
}

// fenceConsumerMember removes m, frees what it owned and bumps the group
// epoch, so that the next heartbeat computes a new target assignment.
// If m was the last member of the consumer protocol and classic members
// remain, the group becomes a classic group instead (consumer_classic.go).
func (g *group) fenceConsumerMember(m *consumerMember) []record {
	if recs, ok := g.maybeDowngrade(m); ok {
		return recs
	}
	cg := g.consumer
	recs := cg.removeMember(g.id, m)
	cg.epoch++
	return append(recs, record{key: consumerKey(keyConsumerGroupMetadata, g.id), value: consumerEpochValue(cg.epoch)})
}

// removeMember drops m and returns the tombstones of its records, in
// Kafka's order.
func (cg *consumerGroup) removeMember(group string, m *consumerMember) []record {
	prevAssigned, prevPending := m.assigned, m.pendingRevoke
	m.assigned, m.pendingRevoke = nil, nil
	cg.setOwnership(m, prevAssigned, prevPending)
	delete(cg.members, m.id)
	if m.instanceID != nil && cg.static[*m.instanceID] == m.id {
		delete(cg.static, *m.instanceID)
	}
	return []record{
		{key: consumerKey(keyConsumerCurrentAssignment, group, m.id)},
		{key: consumerKey(keyConsumerTargetMember, group, m.id)},
		{key: consumerKey(keyConsumerMemberMetadata, group, m.id)},
	}
}

// advance returns the records of what a change of the group's members
// (bump: one that moves the group epoch) leads to: the subscribed topics'
// metadata when it changed (a new topic, a topic gone or more partitions
// bump the group epoch too), the new group epoch, and a new target
// assignment once the group epoch is past the assignment's.
func (cg *consumerGroup) advance(g *group, v *topicView, bump bool) []record {
	var recs []record
	sub := cg.subscriptionMetadata(v)
	if !slices.Equal(sub, cg.subscription) {
		cg.subscription = sub
		bump = true
		recs = append(recs, record{key: consumerKey(keyConsumerPartitionMetadata, g.id), value: partitionMetadataValue(sub)})
	}
	if bump {
		cg.epoch++
		recs = append(recs, record{key: consumerKey(keyConsumerGroupMetadata, g.id), value: consumerEpochValue(cg.epoch)})
	}
	if cg.epoch > cg.assignmentEpoch {
		g.counters.consumerRebalanced()
		recs = append(recs, cg.computeTarget(g.id, v)...)
	}
	return recs
}

// subscriptionMetadata is the metadata of every topic some member
// subscribes to, sorted by name.
func (cg *consumerGroup) subscriptionMetadata(v *topicView) []subscribedTopic {
	names := map[string]bool{}
	for _, m := range cg.members {
		for t := range v.subscribed(m) {
			names[t] = true
		}
	}
	out := make([]subscribedTopic, 0, len(names))
	for n := range names {
		t := v.byName[n]
		out = append(out, subscribedTopic{id: t.ID, name: t.Name, partitions: t.Partitions})
	}
	slices.SortFunc(out, func(a, b subscribedTopic) int { return cmp.Compare(a.name, b.name) })
	return out
}

// assignorName is the assignor most members ask for (ties by name), the
// uniform one when none asks.
func (cg *consumerGroup) assignorName() string {
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.serverAssignor != nil {
			votes[*m.serverAssignor]++
		}
	}
	best := assignorUniform
	for name, n := range votes {
		if n > votes[best] || (n == votes[best] && name < best) {
			best = name
		}
	}
	return best
}

// computeTarget computes the target assignment of the group epoch and
// returns its records: the members whose share changed, then the
// assignment epoch.
func (cg *consumerGroup) computeTarget(group string, v *topicView) []record {
	var members []assignMember
	for _, id := range cg.memberIDs() {
		m := cg.members[id]
		am := assignMember{id: id, topics: v.subscribed(m), prev: m.target}
		if m.rackID != nil {
			am.rack = *m.rackID
		}
		members = append(members, am)
	}
	var topics []assignTopic
	for _, t := range cg.subscription {
		meta := v.byName[t.name]
		topics = append(topics, assignTopic{name: t.name, id: t.id, partitions: t.partitions, racks: meta.Racks})
	}
	target := assignPartitions(cg.assignorName(), members, topics)
	var recs []record
	for _, id := range cg.memberIDs() {
		m := cg.members[id]
		if !m.target.equal(target[id]) {
			m.target = target[id]
			recs = append(recs, record{key: consumerKey(keyConsumerTargetMember, group, id), value: targetMemberValue(m.target)})
		}
	}
	cg.assignmentEpoch = cg.epoch
	return append(recs, record{key: consumerKey(keyConsumerTargetMetadata, group), value: consumerEpochValue(cg.assignmentEpoch)})
}

// consumerTick fences the members whose session ended and those that did
// not revoke within their rebalance timeout, and returns the records.
func (g *group) consumerTick() []record {
	if g.consumer == nil {
		return nil
	}
	var recs []record
	for _, id := range g.consumer.memberIDs() {
		m := g.consumer.members[id]
		if !g.now.Before(m.expiresAt) || (!m.revokeDeadline.IsZero() && !g.now.Before(m.revokeDeadline)) || g.classicExpired(m) {
			recs = append(recs, g.fenceConsumerMember(m)...)
			if g.consumer == nil {
				break // downgraded to a classic group
			}
		}
	}
	return recs
}

// consumerDeadline is the earliest time consumerTick has work.
func (g *group) consumerDeadline(consider func(time.Time)) {
	if g.consumer == nil {
		return
	}
	for _, m := range g.consumer.members {
		consider(m.expiresAt)
		consider(m.revokeDeadline)
		consider(m.timers.joinDeadline)
		consider(m.timers.syncDeadline)
	}
}

// consumerLiveRecords is the consumer group's state as records (a
// compaction snapshot).
func (cg *consumerGroup) liveRecords(group string) []record {
	recs := []record{
		{key: consumerKey(keyConsumerGroupMetadata, group), value: consumerEpochValue(cg.epoch)},
		{key: consumerKey(keyConsumerPartitionMetadata, group), value: partitionMetadataValue(cg.subscription)},
	}
	for _, id := range cg.memberIDs() {
		m := cg.members[id]
		recs = append(recs,
			record{key: consumerKey(keyConsumerMemberMetadata, group, id), value: memberMetadataValue(m.metadata())},
			record{key: consumerKey(keyConsumerTargetMember, group, id), value: targetMemberValue(m.target)})
	}
	recs = append(recs, record{key: consumerKey(keyConsumerTargetMetadata, group), value: consumerEpochValue(cg.assignmentEpoch)})
	for _, id := range cg.memberIDs() {
		m := cg.members[id]
		recs = append(recs, record{key: consumerKey(keyConsumerCurrentAssignment, group, id), value: currentAssignmentValue(m.current())})
	}
	return recs
}

// tombstones deletes every record of the consumer group (DeleteGroups).
func (cg *consumerGroup) tombstones(group string) []record {
	var recs []record
	for _, id := range cg.memberIDs() {
		recs = append(recs,
			record{key: consumerKey(keyConsumerCurrentAssignment, group, id)},
			record{key: consumerKey(keyConsumerTargetMember, group, id)},
			record{key: consumerKey(keyConsumerMemberMetadata, group, id)})
	}
	return append(recs,
		record{key: consumerKey(keyConsumerTargetMetadata, group)},
		record{key: consumerKey(keyConsumerPartitionMetadata, group)},
		record{key: consumerKey(keyConsumerGroupMetadata, group)})
}

// validateCommit checks an OffsetCommit against the consumer group (see
// offset_commit.go) and returns its error code, 0 to accept it.
func (cg *consumerGroup) validateCommit(cr commitRequest) int16 {
	if cr.generation < 0 && cr.memberID == "" {
		if len(cg.members) > 0 {
			return kerr.UnknownMemberID.Code
		}
		return 0 // a simple commit (the admin client, a manual consumer) to an empty group
	}
	m, ok := cg.members[cr.memberID]
	switch {
	case !ok:
		return kerr.UnknownMemberID.Code
	case m.classic != nil && cr.generation != m.epoch:
		return kerr.IllegalGeneration.Code // a classic member commits with its generation
	case m.classic != nil:
		return 0
	case cr.version < 9 && !cr.transactional:
		return kerr.UnsupportedVersion.Code
	case cr.generation == m.epoch:
		return 0
	case cr.generation > m.epoch || cr.generation < m.previousEpoch:
		return kerr.StaleMemberEpoch.Code
	}
	for _, o := range cr.offsets {
		id, ok := cr.topicIDs[o.tp.topic]
		if !ok || (!m.assigned.has(id, o.tp.partition) && !m.pendingRevoke.has(id, o.tp.partition)) {
			return kerr.StaleMemberEpoch.Code
		}
	}
	return 0
}

// validateFetch checks the member an OffsetFetch v9 names (Kafka's
// validateOffsetFetch): 0, UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH.
func (cg *consumerGroup) validateFetch(f fetchMember) int16 {
	if f.epoch < 0 && f.id == "" {
		return 0
	}
	m, ok := cg.members[f.id]
	switch {
	case !ok:
		return kerr.UnknownMemberID.Code
	case f.epoch != m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}
