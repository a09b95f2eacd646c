package partition

// Leaders finds the replica that this node leads for a partition. The
// protocol handlers (produce, fetch, the group coordinator) look replicas up
// through it; the node's replica manager implements it.
type Leaders interface {
	// Leader returns the local leader replica, or an error wrapping
	// ErrUnknownTopicOrPartition or ErrNotLeader.
	Leader(topic string, p int32) (*Replica, error)
}

// Directory is what the protocol handlers need of the cluster's metadata
// beyond the replicas this node leads: topic ids (KIP-516, Produce v13 and
// Fetch v13+ name topics by id) and who leads a partition this node does
// not (KIP-951: a NOT_LEADER_OR_FOLLOWER answer names the current leader
// and its endpoint, so that the client moves without a metadata request).
// The broker implements it over the control plane's cache; its methods are
// safe to call concurrently.
type Directory interface {
	// TopicName returns the name of the live topic with id.
	TopicName(id [16]byte) (string, bool)
	// TopicID returns the id of the live topic name.
	TopicID(name string) ([16]byte, bool)
	// CurrentLeader returns the leader and leader epoch of topic-p as the
	// control plane has them, with the leader's endpoint on listener when
	// the leader is registered and has that listener; false when the
	// partition is unknown.
	CurrentLeader(topic string, p int32, listener string) (LeaderHint, bool)
}

// LeaderHint is a partition's current leader (KIP-951's CurrentLeader and
// NodeEndpoint).
type LeaderHint struct {
	Leader, LeaderEpoch int32
	// Endpoint is nil when the leader has no endpoint to give: none
	// elected, not registered, or without the client's listener.
	Endpoint *NodeEndpoint
}

// NodeEndpoint is where a client reaches a node on its listener.
type NodeEndpoint struct {
	NodeID int32
	Host   string
	Port   int32
	Rack   *string
}
