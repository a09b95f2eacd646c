package partition

// Leaders finds the replica that this node leads for a partition. The
// protocol handlers (produce, fetch, the group coordinator) look replicas up
// through it; the node's replica manager implements it.
type Leaders interface {
	// Leader returns the local leader replica, or an error wrapping
	// ErrUnknownTopicOrPartition or ErrNotLeader.
	Leader(topic string, p int32) (*Replica, error)
}
