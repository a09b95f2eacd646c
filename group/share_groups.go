package group

// ShareGroups is what ListGroups and DeleteGroups need of the node's
// KIP-932 share groups (package share owns them; they share the group id
// space and the coordinator: the leader of the group's offsets partition).
// Implementations are safe for concurrent use.
type ShareGroups interface {
	// ListShareGroups returns the share groups this node coordinates: id
	// and state (Empty or Stable).
	ListShareGroups() []ShareGroupListing
	// DeleteShareGroup deletes an empty share group and its share-partition
	// state; existed is false for no such share group, and a group with
	// members is not deleted (NON_EMPTY_GROUP).
	DeleteShareGroup(id string) (existed, deleted bool, err error)
	// LoadShareGroups hands over the share groups of offsets partition p,
	// just loaded: each group's live share records in key order. It is
	// called before the partition serves requests, with the coordinator
	// runtime's lock held: it must not block nor call the coordinator.
	LoadShareGroups(p int32, groups map[string][]ShareRecord)
	// UnloadShareGroups drops the share groups of offsets partition p,
	// which this node no longer coordinates in the epoch it loaded. The
	// same rules as LoadShareGroups hold.
	UnloadShareGroups(p int32)
}

// ShareGroupListing is one share group in ListGroups.
type ShareGroupListing struct {
	ID, State string
}

// SetShareGroups has ListGroups list (type "share", protocol type
// "share") and DeleteGroups delete the share groups of s.
func (c *Coordinator) SetShareGroups(s ShareGroups) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.shares = s
}

func (c *Coordinator) shareGroups() ShareGroups {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.shares
}
