package share

import (
	"maps"
	"slices"
)

// The share group membership state: members, their subscriptions and
// assignments. Pure: the caller passes the time in and holds the lock.
//
// The assignment is Kafka's share group model at its simplest: every
// member is assigned every partition of every topic it subscribes to
// (share groups let members share a partition; the share-partition state
// hands each record to one of them at a time).

// TopicMeta is what the coordinator needs of a topic.
type TopicMeta struct {
	ID         [16]byte
	Partitions int32
}

type member struct {
	id, clientID, host string
	rack               *string
	epoch, prevEpoch   int32
	topics             []string            // subscribed topic names, sorted
	assigned           map[[16]byte]int32  // topic id -> partition count assigned
	assignedNames      map[[16]byte]string // topic id -> name, for Describe
	lastSeenMs         int64
	// targetLogged: the log holds this member's target assignment record
	// (key 13) for its assignment (group_records.go).
	targetLogged bool
}

type shareGroup struct {
	id      string
	epoch   int32
	members map[string]*member
	// topics are every topic a member subscribed to since the group was
	// created here (DescribeShareGroupOffsets without topics).
	// (name -> id and partitions when last assigned)
	topics map[string]TopicMeta
	// targetLogged: the log holds the target assignment metadata record
	// (key 12) at epoch (group_records.go).
	targetLogged bool
}

// GroupInfo describes a share group (ListGroups, the CLI).
type GroupInfo struct {
	ID      string
	State   string // Empty or Stable
	Epoch   int32
	Members []MemberInfo
}

// MemberInfo describes one member.
type MemberInfo struct {
	ID, ClientID, Host string
	Rack               *string
	Epoch              int32
	Topics             []string
	Assignment         map[string][]int32 // topic name -> partitions
}

func (g *shareGroup) state() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// assign computes m's assignment from its subscription and topics; it
// reports whether it changed (the member then takes a new epoch).
func (g *shareGroup) assign(m *member, topics func(string) (TopicMeta, bool)) bool {
	next := map[[16]byte]int32{}
	names := map[[16]byte]string{}
	for _, t := range m.topics {
		if tm, ok := topics(t); ok && tm.Partitions > 0 {
			next[tm.ID] = tm.Partitions
			names[tm.ID] = t
			g.topics[t] = tm
		}
	}
	if maps.Equal(next, m.assigned) {
		return false
	}
	m.assigned, m.assignedNames = next, names
	g.epoch++
	m.prevEpoch, m.epoch = m.epoch, g.epoch
	return true
}

func (g *shareGroup) info() GroupInfo {
	gi := GroupInfo{ID: g.id, State: g.state(), Epoch: g.epoch}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		mi := MemberInfo{ID: m.id, ClientID: m.clientID, Host: m.host, Rack: m.rack, Epoch: m.epoch,
			Topics: slices.Clone(m.topics), Assignment: map[string][]int32{}}
		for tid, n := range m.assigned {
			mi.Assignment[m.assignedNames[tid]] = partitionRange(n)
		}
		gi.Members = append(gi.Members, mi)
	}
	return gi
}

func partitionRange(n int32) []int32 {
	ps := make([]int32, n)
	for i := range ps {
		ps[i] = int32(i)
	}
	return ps
}

// expiring reports whether a member of g was not seen within timeoutMs
// of nowMs.
func (g *shareGroup) expiring(nowMs int64, timeoutMs int32) bool {
	for _, m := range g.members {
		if nowMs-m.lastSeenMs > int64(timeoutMs) {
			return true
		}
	}
	return false
}

// expire removes members not seen within timeoutMs of nowMs; it returns
// their ids.
func (g *shareGroup) expire(nowMs int64, timeoutMs int32) []string {
	var gone []string
	for id, m := range g.members {
		if nowMs-m.lastSeenMs > int64(timeoutMs) {
			delete(g.members, id)
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 {
		g.epoch++
	}
	return gone
}
