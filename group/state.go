package group

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a classic group's state, named as Kafka names it.
type State int8

const (
	StateEmpty State = iota
	StatePreparingRebalance
	StateCompletingRebalance
	StateStable
	StateDead
)

// String is Kafka's name for the state (DescribeGroups, ListGroups).
func (s State) String() string {
	switch s {
	case StateEmpty:
		return "Empty"
	case StatePreparingRebalance:
		return "PreparingRebalance"
	case StateCompletingRebalance:
		return "CompletingRebalance"
	case StateStable:
		return "Stable"
	}
	return "Dead"
}

// replyFn answers one request. hw >= 0 asks the handler to wait until the
// offsets partition's high watermark passes hw (an append of this request)
// before writing the response. The state machine calls it exactly once per
// request, from the group's goroutine; it must not block.
type replyFn func(resp kmsg.Response, hw int64)

// waiter is a request held by the state machine (a JoinGroup during a
// rebalance, a SyncGroup until the leader's assignment).
type waiter struct {
	resp kmsg.Response // the response, of the request's version, to fill
	send replyFn
}

func (w *waiter) fail(code int16) {
	switch r := w.resp.(type) {
	case *kmsg.JoinGroupResponse:
		r.ErrorCode = code
	case *kmsg.SyncGroupResponse:
		r.ErrorCode = code
	}
	w.send(w.resp, -1)
}

type protocol struct {
	name     string
	metadata []byte // owned
}

// member is one member of a classic group.
type member struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	rebalanceTimeout time.Duration
	sessionTimeout   time.Duration
	protocols        []protocol
	assignment       []byte // owned
	expiresAt        time.Time
	join             *waiter // a JoinGroup held for the rebalance
	sync             *waiter // a SyncGroup held for the leader's assignment
	synced           bool    // sent SyncGroup in this CompletingRebalance
}

func (m *member) metadataFor(name string) ([]byte, bool) {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata, true
		}
	}
	return nil, false
}

func (m *member) sameProtocols(ps []protocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b protocol) bool {
		return a.name == b.name && bytes.Equal(a.metadata, b.metadata)
	})
}

// record is one __consumer_offsets record; a nil value is a tombstone.
type record struct{ key, value []byte }

// group is one group's state. It is owned by its runner's goroutine: no
// method may be called from anywhere else. It reads no clock (now is set
// by the runner before each event) and does no I/O but through persist.
type group struct {
	id           string
	state        State
	protocolType string
	protocol     string
	generation   int32
	leader       string
	stateSince   time.Time

	members map[string]*member
	pending map[string]time.Time           // KIP-394: member ids handed out, not yet joined -> expiry
	static  map[string]string              // instance id -> member id
	offsets map[topicPartition]offsetEntry // replicated commits: what OffsetFetch answers
	// unreplicated holds, per partition, a commit appended and not yet
	// applied (its replication pending, or failed); deletedAt the offset
	// of a tombstone appended for a partition since an older commit may
	// still be pending.
	unreplicated map[topicPartition]offsetEntry
	deletedAt    map[topicPartition]int64
	// pendingTxn holds, per producer id, the transactional offsets
	// appended and waiting for the transaction's marker (txn_offsets.go).
	pendingTxn map[int64]map[topicPartition]offsetEntry
	// consumer is the KIP-848 consumer group state (consumer_group.go);
	// nil for a classic group.
	consumer *consumerGroup
	// share is a KIP-932 share group's live records (share_records.go):
	// key -> value.
	share map[string][]byte

	rebalanceDeadline time.Time // PreparingRebalance: complete the join by then
	syncDeadline      time.Time // CompletingRebalance: members that did not sync by then are removed

	now     time.Time
	limits  *Config
	persist func([]record) (hw int64, err error) // appends the records; returns the last offset
	// persistTxn appends records as a transactional batch of a producer.
	persistTxn func(txnProducer, []record) (int64, error)
	// counters are the coordinator's totals (metrics.go); nil in a group
	// run without a coordinator.
	counters *counters
}

func newGroup(id string, limits *Config, persist func([]record) (int64, error)) *group {
	return &group{
		id: id, limits: limits, persist: persist,
		members: map[string]*member{}, pending: map[string]time.Time{},
		static: map[string]string{}, offsets: map[topicPartition]offsetEntry{},
		unreplicated: map[topicPartition]offsetEntry{}, deletedAt: map[topicPartition]int64{},
		pendingTxn: map[int64]map[topicPartition]offsetEntry{},
	}
}

func newMemberID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

func (g *group) setState(s State) {
	g.state = s
	g.stateSince = g.now
}

// touch restarts a member's session timer.
func (g *group) touch(m *member) { m.expiresAt = g.now.Add(m.sessionTimeout) }

func (g *group) maxRebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// allJoined: every member waits in JoinGroup and no member id handed out
// by MEMBER_ID_REQUIRED is still to come.
func (g *group) allJoined() bool {
	for _, m := range g.members {
		if m.join == nil {
			return false
		}
	}
	return len(g.pending) == 0
}

// protocolsMatch reports whether a member with these protocols may join:
// the protocol type is the group's, and one of its protocols is supported
// by every current member.
func (g *group) protocolsMatch(protocolType string, ps []protocol) bool {
	if protocolType == "" || len(ps) == 0 {
		return false
	}
	if len(g.members) == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range ps {
		if g.supportedByAll(p.name) {
			return true
		}
	}
	return false
}

func (g *group) supportedByAll(name string) bool {
	for _, m := range g.members {
		if _, ok := m.metadataFor(name); !ok {
			return false
		}
	}
	return true
}

// selectProtocol is Kafka's vote: among the protocols every member
// supports, each member votes for the first of its own list; most votes
// wins, ties go to the earlier name.
func (g *group) selectProtocol() string {
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if g.supportedByAll(p.name) {
				votes[p.name]++
				break
			}
		}
	}
	best, bestVotes := "", 0
	for name, v := range votes {
		if v > bestVotes || (v == bestVotes && name < best) {
			best, bestVotes = name, v
		}
	}
	return best
}

// addMember adds m, waiting in join, and rebalances.
func (g *group) addMember(m *member, protocolType string, w *waiter) {
	delete(g.pending, m.id)
	if len(g.members) == 0 {
		g.protocolType = protocolType
	}
	g.members[m.id] = m
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	m.join = w
	g.touch(m)
	g.rebalance()
}

// updateMember replaces m's protocols from a new JoinGroup and rebalances.
func (g *group) updateMember(m *member, ps []protocol, rebalanceTimeout, sessionTimeout time.Duration, w *waiter) {
	if m.join != nil && m.join != w {
		m.join.fail(kerr.RebalanceInProgress.Code) // a retried join replaces the old one
	}
	m.protocols, m.rebalanceTimeout, m.sessionTimeout = ps, rebalanceTimeout, sessionTimeout
	m.join = w
	g.touch(m)
	g.rebalance()
}

// removeMember drops m without rebalancing; requests it holds are answered
// UNKNOWN_MEMBER_ID.
func (g *group) removeMember(m *member) {
	delete(g.members, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	if m.join != nil {
		m.join.fail(kerr.UnknownMemberID.Code)
		m.join = nil
	}
	if m.sync != nil {
		m.sync.fail(kerr.UnknownMemberID.Code)
		m.sync = nil
	}
}

// rebalance moves the group to PreparingRebalance (answering held
// SyncGroups REBALANCE_IN_PROGRESS) and completes the join at once if every
// member is already waiting.
func (g *group) rebalance() {
	if g.state == StateCompletingRebalance {
		for _, m := range g.members {
			if m.sync != nil {
				m.sync.fail(kerr.RebalanceInProgress.Code)
				m.sync = nil
			}
		}
	}
	g.syncDeadline = time.Time{}
	if g.state != StatePreparingRebalance {
		g.setState(StatePreparingRebalance)
		g.rebalanceDeadline = g.now.Add(g.maxRebalanceTimeout())
	}
	if g.allJoined() {
		g.completeJoin()
	}
}

// completeJoin ends PreparingRebalance: members not waiting in join are
// removed, the generation moves on, a protocol and a leader are chosen and
// every held JoinGroup is answered. With no member left the group is Empty.
func (g *group) completeJoin() {
	if g.state != StatePreparingRebalance {
		return
	}
	g.rebalanceDeadline = time.Time{}
	for _, m := range g.members {
		if m.join == nil {
			g.removeMember(m)
		}
	}
	g.generation++
	if len(g.members) == 0 {
		g.setState(StateEmpty)
		g.protocol, g.leader = "", ""
		g.persistMetadata() // best effort: the group is empty either way
		return
	}
	g.setState(StateCompletingRebalance)
	g.protocol = g.selectProtocol()
	ids := g.memberIDs()
	if _, ok := g.members[g.leader]; !ok {
		g.leader = ids[0]
	}
	for _, id := range ids {
		m := g.members[id]
		m.synced = false
		resp := m.join.resp.(*kmsg.JoinGroupResponse)
		g.fillJoin(m, resp)
		send := m.join.send
		m.join = nil
		g.touch(m)
		send(resp, -1)
	}
	g.syncDeadline = g.now.Add(g.maxRebalanceTimeout())
}

func (g *group) memberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// fillJoin fills a successful JoinGroup answer for m; the leader gets the
// members' metadata for the chosen protocol.
func (g *group) fillJoin(m *member, resp *kmsg.JoinGroupResponse) {
	resp.ErrorCode = 0
	resp.Generation = g.generation
	resp.ProtocolType = kmsg.StringPtr(g.protocolType)
	resp.Protocol = kmsg.StringPtr(g.protocol)
	resp.LeaderID = g.leader
	resp.MemberID = m.id
	resp.Members = nil
	if m.id != g.leader {
		return
	}
	for _, id := range g.memberIDs() {
		o := g.members[id]
		md, _ := o.metadataFor(g.protocol)
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID, jm.InstanceID, jm.ProtocolMetadata = o.id, o.instanceID, md
		resp.Members = append(resp.Members, jm)
	}
}

// tick applies the timers due at g.now: expired pending member ids,
// expired sessions, the rebalance and sync deadlines, and a consumer
// group's expired sessions and revocations (whose records are appended
// with no one waiting: a failed append is retried by no one, and the next
// coordinator's load brings the members back, to expire again).
func (g *group) tick() {
	if recs := g.consumerTick(); len(recs) > 0 {
		g.persist(recs)
	}
	for id, exp := range g.pending {
		if !g.now.Before(exp) {
			delete(g.pending, id)
		}
	}
	removed := false
	for _, m := range g.members {
		if m.join == nil && m.sync == nil && !g.now.Before(m.expiresAt) {
			g.removeMember(m)
			removed = true
		}
	}
	switch {
	case g.state == StatePreparingRebalance && (g.allJoined() || !g.now.Before(g.rebalanceDeadline)):
		g.completeJoin()
	case g.state == StateCompletingRebalance && !g.syncDeadline.IsZero() && !g.now.Before(g.syncDeadline):
		for _, m := range g.members {
			if !m.synced {
				g.removeMember(m)
			}
		}
		g.rebalance()
	case removed && (g.state == StateStable || g.state == StateCompletingRebalance):
		g.rebalance()
	}
}

// nextDeadline is the earliest time tick has work, or zero for none.
func (g *group) nextDeadline() time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, exp := range g.pending {
		consider(exp)
	}
	for _, m := range g.members {
		if m.join == nil && m.sync == nil {
			consider(m.expiresAt)
		}
	}
	if g.state == StatePreparingRebalance {
		consider(g.rebalanceDeadline)
	}
	if g.state == StateCompletingRebalance {
		consider(g.syncDeadline)
	}
	g.consumerDeadline(consider)
	return next
}

// shutdown answers every held request NOT_COORDINATOR (the coordinator is
// moving or closing).
func (g *group) shutdown() {
	for _, m := range g.members {
		if m.join != nil {
			m.join.fail(kerr.NotCoordinator.Code)
			m.join = nil
		}
		if m.sync != nil {
			m.sync.fail(kerr.NotCoordinator.Code)
			m.sync = nil
		}
	}
}

// validateInstance checks a static member's instance id against the
// member id it claims (KIP-345): UNKNOWN_MEMBER_ID for an unknown instance,
// FENCED_INSTANCE_ID for an instance now owned by another member id.
func (g *group) validateInstance(instanceID *string, memberID string) int16 {
	if instanceID == nil {
		return 0
	}
	known, ok := g.static[*instanceID]
	switch {
	case !ok:
		return kerr.UnknownMemberID.Code
	case known != memberID:
		return kerr.FencedInstanceID.Code
	}
	return 0
}

// metadataValue is the group's GroupMetadataValue for __consumer_offsets.
func (g *group) metadataValue() *kmsg.GroupMetadataValue {
	v := kmsg.NewGroupMetadataValue()
	v.ProtocolType, v.Generation = g.protocolType, g.generation
	if g.protocol != "" {
		v.Protocol = kmsg.StringPtr(g.protocol)
	}
	if g.leader != "" {
		v.Leader = kmsg.StringPtr(g.leader)
	}
	v.CurrentStateTimestamp = -1 // unknown, as Kafka writes it
	if !g.stateSince.IsZero() {
		v.CurrentStateTimestamp = g.stateSince.UnixMilli()
	}
	for _, id := range g.memberIDs() {
		m := g.members[id]
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.InstanceID, vm.ClientID, vm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout / time.Millisecond)
		vm.SessionTimeoutMillis = int32(m.sessionTimeout / time.Millisecond)
		vm.Subscription, _ = m.metadataFor(g.protocol)
		vm.Assignment = m.assignment
		v.Members = append(v.Members, vm)
	}
	return &v
}

// persistMetadata appends the group's metadata record and returns the
// offset to wait for.
func (g *group) persistMetadata() (int64, error) {
	return g.persist([]record{{key: groupKey(g.id), value: groupValue(g.metadataValue())}})
}
