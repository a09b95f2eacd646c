package partition

// SetLeadership makes the replica the partition's leader at epoch, or a
// follower. A follower refuses produce (ErrNotLeader) and is not served to
// consumers. The control plane decides; the broker applies its decisions
// here, and the epoch is stamped into every batch the leader appends. It
// reports whether anything changed.
func (r *Replica) SetLeadership(leader bool, epoch int32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.leader == leader && r.mu.leaderEpoch == epoch {
		return false
	}
	if leader && (!r.mu.leader || r.mu.leaderEpoch != epoch) {
		// A new term: follower progress is learnt afresh from their fetches.
		r.mu.leaderAt = r.now()
		r.mu.followers = map[int32]*followerState{}
	}
	r.mu.leader, r.mu.leaderEpoch = leader, epoch
	close(r.mu.leoChanged)
	r.mu.leoChanged = make(chan struct{})
	// Wake long polls and acks=all waiters: they re-check the role.
	close(r.mu.hwChanged)
	r.mu.hwChanged = make(chan struct{})
	return true
}

// IsLeader reports whether the replica currently leads its partition.
func (r *Replica) IsLeader() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.leader
}
