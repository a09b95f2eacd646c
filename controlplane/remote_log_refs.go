package controlplane

import "slices"

// Object references across topics. A fork (package restore, `shale topic
// fork`) writes remote segment records of a new topic that list the
// source topic's segment objects: one object may then be listed by the
// records and quarantine entries of several topics. The RemoteLog keeps,
// from its cache, which topics list each object key, so that a delete of
// one topic's record (retention, DeleteRecords, topic deletion, a purge,
// the orphan sweeps) leaves the objects another topic still lists. The
// count is the reference count of deletion: an object goes with the last
// record or entry that lists it.

// refsAddLocked counts owner's listing of keys (each key once).
// REQUIRES: rl.mu held for writing.
func (rl *RemoteLog) refsAddLocked(owner TopicID, keys []string, delta int) {
	if len(keys) == 0 {
		return
	}
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		byTopic := rl.mu.refs[k]
		if byTopic == nil {
			if delta < 0 {
				continue
			}
			byTopic = map[TopicID]int{}
			rl.mu.refs[k] = byTopic
		}
		byTopic[owner] += delta
		if byTopic[owner] <= 0 {
			delete(byTopic, owner)
		}
		if len(byTopic) == 0 {
			delete(rl.mu.refs, k)
		}
	}
}

// quarantineKeys are the object keys an entry lists: its objects and its
// segment's.
func quarantineKeys(e QuarantineEntry) []string {
	keys := slices.Clone(e.Objects)
	if e.Segment != nil {
		keys = append(keys, e.Segment.Objects...)
	}
	return keys
}

// ObjectListedBy returns the ids of the topics whose remote segment records
// or quarantine entries list key, from the cache (after watcher delay, every
// node's writes), in no particular order; nil when none does.
func (rl *RemoteLog) ObjectListedBy(key string) []TopicID {
	rl.mu.RLock()
	defer rl.mu.RUnlock()
	var out []TopicID
	for id := range rl.mu.refs[key] {
		out = append(out, id)
	}
	return out
}

// SharedWithOtherTopics reports whether a record or quarantine entry of a
// topic other than id lists key: a delete on behalf of id must leave the
// object in the bucket.
func (rl *RemoteLog) SharedWithOtherTopics(key string, id TopicID) bool {
	rl.mu.RLock()
	defer rl.mu.RUnlock()
	for owner := range rl.mu.refs[key] {
		if owner != id {
			return true
		}
	}
	return false
}
