package fetch

// Follower fetching (KIP-392), Fetch v11+.
//
//   - A follower serves a consumer that fetches from it (v11+, which
//     carries the client's rack) as Kafka's do, with WithFollowerReads:
//     up to its own high watermark (the leader's as of its last fetch,
//     never past its log end), or its last stable offset for
//     read_committed; it long-polls on its high watermark; an offset past
//     its log end is OFFSET_OUT_OF_RANGE (clients then go back to the
//     leader); an offset below its local log start that the bucket holds is
//     a cold read, as on the leader, since every replica reads the bucket.
//     The leader epoch a consumer names is checked against the follower's.
//     Before v11 a follower answers NOT_LEADER_OR_FOLLOWER.
//   - With WithRackAwareSelector (replica_selector_class
//     RackAwareReplicaSelector) a leader names, for a consumer whose
//     RackId is set, a preferred read replica (Kafka's
//     RackAwareReplicaSelector): itself when it is in the consumer's rack
//     (then nothing is named), else the most caught-up in-sync follower in
//     that rack (largest log end, then the latest caught up) that holds the
//     fetch offset: its log end is past it and its log start at or below
//     it, or the offset is in the bucket (a cold read may be served by any
//     replica). That partition is answered at once with no records, the
//     high watermark, last stable offset and log start, and
//     PreferredReadReplica; the client fetches from that replica until an
//     error sends it back.

import (
	"cmp"
	"time"

	"github.com/shale-io/shale/partition"
)

// LocalReplicas finds a replica this node holds, leader or follower
// (replica.Manager). Safe for concurrent use.
type LocalReplicas interface {
	// Assigned returns the replica of topic-p on this node while the control
	// plane assigns it here; an error wrapping partition.ErrNotLeader
	// otherwise.
	Assigned(topic string, p int32) (*partition.Replica, error)
}

// ReplicaEndpoints says where a node is reached on a listener and in which
// rack (the broker's view of the control plane). Safe for concurrent use.
type ReplicaEndpoints interface {
	// NodeEndpoint returns node's endpoint on listener; false when the
	// node is not registered or has no such listener.
	NodeEndpoint(node int32, listener string) (partition.NodeEndpoint, bool)
}

// WithFollowerReads has Fetch serve consumers (v11+) from the replicas
// this node follows, through local.
func WithFollowerReads(local LocalReplicas) Option {
	return func(o *options) { o.local = local }
}

// WithRackAwareSelector has a leader in rack name a preferred read replica
// to consumers of another rack (Kafka's RackAwareReplicaSelector), with
// the followers' racks and endpoints from endpoints.
func WithRackAwareSelector(rack string, endpoints ReplicaEndpoints) Option {
	return func(o *options) { o.selector = &rackSelector{rack: rack, endpoints: endpoints} }
}

type rackSelector struct {
	rack      string
	endpoints ReplicaEndpoints
}

// readCandidate is a replica a consumer may be sent to: Kafka's
// ReplicaView.
type readCandidate struct {
	id            int32
	rack          string
	logEnd        int64
	sinceCaughtUp time.Duration
}

// rackAwareSelect is Kafka's RackAwareReplicaSelector.select: the
// replica a consumer in clientRack should read from, among the leader
// (in leaderRack) and the eligible followers; -1 for the leader (which is
// never named as a preferred read replica). With no client rack, or the
// leader in it, or no follower in it, the leader; else the follower in it
// with the largest log end, then the shortest time since it was caught
// up, then (Kafka leaves this to a hash set's order) the smallest id.
func rackAwareSelect(clientRack, leaderRack string, followers []readCandidate) int32 {
	if clientRack == "" || leaderRack == clientRack {
		return -1
	}
	best := -1
	for i, f := range followers {
		if f.rack != clientRack {
			continue
		}
		if best < 0 || better(f, followers[best]) {
			best = i
		}
	}
	if best < 0 {
		return -1
	}
	return followers[best].id
}

// better orders two candidates of one rack, as rackAwareSelect says.
func better(a, b readCandidate) bool {
	if c := cmp.Or(cmp.Compare(a.logEnd, b.logEnd), -cmp.Compare(a.sinceCaughtUp, b.sinceCaughtUp)); c != 0 {
		return c > 0
	}
	return a.id < b.id
}

// preferredReplica returns the preferred read replica for a consumer in
// clientRack fetching topic-p at offset from rep, this node's leader
// replica, reached on listener; false when the leader serves it. inRemote
// says the offset is in the bucket, where any replica can read it.
func (s *rackSelector) preferredReplica(rep *partition.Replica, listener, clientRack string, offset int64, inRemote bool, now time.Time) (int32, bool) {
	if clientRack == "" || s.rack == clientRack {
		return -1, false
	}
	views, err := rep.InSyncFollowers()
	if err != nil {
		return -1, false
	}
	cands := make([]readCandidate, 0, len(views))
	for _, v := range views {
		if v.LogEnd < offset || !(inRemote || v.LogStart >= 0 && v.LogStart <= offset) {
			continue
		}
		ep, ok := s.endpoints.NodeEndpoint(v.ID, listener)
		if !ok || ep.Rack == nil {
			continue // Kafka's Node.noNode(): never selected
		}
		cands = append(cands, readCandidate{id: v.ID, rack: *ep.Rack, logEnd: v.LogEnd, sinceCaughtUp: now.Sub(v.LastCaughtUp)})
	}
	id := rackAwareSelect(clientRack, s.rack, cands)
	return id, id >= 0
}
