package share

// The share group records of __consumer_offsets, as Kafka 4's group
// coordinator writes them (group-coordinator/src/main/resources/common/
// message). Keys are not flexible (int16 version, int16-length strings);
// values are flexible version 0 (compact strings and arrays, tagged
// fields); a null value is a tombstone.
//
//   - key 10 ShareGroupMemberMetadataKey (group, member) -> rack id
//     (nullable), client id, client host, subscribed topic names.
//   - key 11 ShareGroupMetadataKey (group) -> group epoch.
//   - key 12 ShareGroupTargetAssignmentMetadataKey (group) -> assignment
//     epoch: the group epoch, since the target is computed at each one.
//   - key 13 ShareGroupTargetAssignmentMemberKey (group, member) ->
//     target partitions (topic id, partitions): with the simple assignor
//     every partition of the member's subscribed topics, its current
//     assignment.
//   - key 14 ShareGroupCurrentMemberAssignmentKey (group, member) ->
//     member epoch, previous member epoch, state (0, stable: a share
//     member never revokes), assigned partitions (topic id, partitions).
//   - key 15 ShareGroupStatePartitionMetadataKey (group) -> initialized
//     topics (id, name, partitions) and deleting topics (none written):
//     every topic a member subscribed to (DeleteGroups resets their
//     share-partitions).
//
// Not written: 9 (ShareGroupPartitionMetadata, gone from Kafka 4.1). The
// target records (12, 13) are written with the changes of the group epoch
// and of each member's assignment, as Kafka writes them, and at the first
// change after a load that did not find them (a log of an older Shale,
// which did not write them). The package writes these records
// through a MembershipLog (the group coordinator, which owns the log) and
// gets them back when the coordinator loads a partition (LoadGroups).
// The decoders read bytes from the log, which anyone allowed to produce to
// __consumer_offsets can write: they bound every length by what is left
// and never panic.

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/shale-io/shale/coordinator"
)

// Share group record key versions.
const (
	keyMemberMetadata    = 10
	keyGroupMetadata     = 11
	keyTargetMetadata    = 12
	keyTargetMember      = 13
	keyCurrentAssignment = 14
	keyStatePartitions   = 15
)

// ErrCorruptGroupRecord is a share group record of __consumer_offsets
// that does not decode.
var ErrCorruptGroupRecord = errors.New("share: corrupt share group record")

// LogRecord is one share group record of __consumer_offsets; a nil Value
// is a tombstone.
type LogRecord struct{ Key, Value []byte }

func groupRecordKey(version int16, group string, member ...string) []byte {
	b := kbin.AppendInt16(nil, version)
	b = kbin.AppendString(b, group)
	for _, m := range member {
		b = kbin.AppendString(b, m)
	}
	return b
}

// groupRecordKeyOf decodes a share group key: version, group, member
// (versions 10, 13 and 14).
func groupRecordKeyOf(b []byte) (version int16, group, member string, err error) {
	r := kbin.Reader{Src: b}
	version = r.Int16()
	group = r.String()
	switch version {
	case keyMemberMetadata, keyTargetMember, keyCurrentAssignment:
		member = r.String()
	}
	if err := r.Complete(); err != nil || version < 9 || version > 15 {
		return 0, "", "", fmt.Errorf("%w: key v%d: %v", ErrCorruptGroupRecord, version, err)
	}
	return version, group, member, nil
}

type valueReader struct{ coordinator.RecordReader }

func newValueReader(b []byte) *valueReader {
	return &valueReader{*coordinator.NewRecordReader(b)}
}

func (r *valueReader) done(what string) error {
	if err := r.Done(); err != nil {
		return fmt.Errorf("%w: %s value: %v", ErrCorruptGroupRecord, what, err)
	}
	return nil
}

func epochValue(epoch int32) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, epoch)
	return kbin.AppendUvarint(b, 0)
}

func memberMetadataValue(m *member) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendCompactNullableString(b, m.rack)
	b = kbin.AppendCompactString(b, m.clientID)
	b = kbin.AppendCompactString(b, m.host)
	b = kbin.AppendCompactArrayLen(b, len(m.topics))
	for _, t := range m.topics {
		b = kbin.AppendCompactString(b, t)
	}
	return kbin.AppendUvarint(b, 0)
}

func sortedIDs[V any](m map[[16]byte]V) [][16]byte {
	return slices.SortedFunc(maps.Keys(m), func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) })
}

func currentAssignmentValue(m *member) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, m.epoch)
	b = kbin.AppendInt32(b, m.prevEpoch)
	b = kbin.AppendInt8(b, 0) // stable
	b = appendAssigned(b, m)
	return kbin.AppendUvarint(b, 0)
}

// targetMemberValue is m's target assignment: its assigned partitions.
func targetMemberValue(m *member) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = appendAssigned(b, m)
	return kbin.AppendUvarint(b, 0)
}

// appendAssigned appends m's assigned partitions as an array of (topic
// id, partitions), what readPartitions reads.
func appendAssigned(b []byte, m *member) []byte {
	ids := sortedIDs(m.assigned)
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, id := range ids {
		b = kbin.AppendUuid(b, id)
		ps := partitionRange(m.assigned[id])
		b = kbin.AppendCompactArrayLen(b, len(ps))
		for _, p := range ps {
			b = kbin.AppendInt32(b, p)
		}
		b = kbin.AppendUvarint(b, 0)
	}
	return b
}

// readPartitions reads an array of (topic id, partitions) as a member's
// assignment (topic id -> partition count).
func (r *valueReader) readPartitions() map[[16]byte]int32 {
	out := map[[16]byte]int32{}
	for n := r.ArrayLen(); n > 0 && r.Ok(); n-- {
		tid := r.Uuid()
		ps := r.Int32s()
		r.SkipTags()
		if len(ps) > 0 {
			out[tid] = int32(len(ps))
		}
	}
	return out
}

// statePartitionsValue lists topics (name -> meta) as initialized.
func statePartitionsValue(topics map[string]TopicMeta) []byte {
	b := kbin.AppendInt16(nil, 0)
	names := slices.Sorted(maps.Keys(topics))
	b = kbin.AppendCompactArrayLen(b, len(names))
	for _, n := range names {
		b = kbin.AppendUuid(b, topics[n].ID)
		b = kbin.AppendCompactString(b, n)
		ps := partitionRange(topics[n].Partitions)
		b = kbin.AppendCompactArrayLen(b, len(ps))
		for _, p := range ps {
			b = kbin.AppendInt32(b, p)
		}
		b = kbin.AppendUvarint(b, 0)
	}
	b = kbin.AppendCompactArrayLen(b, 0) // deleting topics
	return kbin.AppendUvarint(b, 0)
}

// groupRecords is the records that take a group from prev (nil: none) to
// g (nil: deleted). It marks g's target records as written (targetLogged):
// the caller installs g only once the records are appended.
func groupRecords(id string, prev, g *shareGroup) []LogRecord {
	var out []LogRecord
	put := func(k, v []byte) { out = append(out, LogRecord{Key: k, Value: v}) }
	if g == nil {
		if prev == nil {
			return nil
		}
		for _, mid := range slices.Sorted(maps.Keys(prev.members)) {
			put(groupRecordKey(keyMemberMetadata, id, mid), nil)
			put(groupRecordKey(keyTargetMember, id, mid), nil)
			put(groupRecordKey(keyCurrentAssignment, id, mid), nil)
		}
		put(groupRecordKey(keyTargetMetadata, id), nil)
		put(groupRecordKey(keyStatePartitions, id), nil)
		put(groupRecordKey(keyGroupMetadata, id), nil)
		return out
	}
	if prev == nil || prev.epoch != g.epoch {
		put(groupRecordKey(keyGroupMetadata, id), epochValue(g.epoch))
	}
	if prev == nil || prev.epoch != g.epoch || !prev.targetLogged {
		put(groupRecordKey(keyTargetMetadata, id), epochValue(g.epoch))
	}
	g.targetLogged = true
	if prev == nil || !maps.Equal(prev.topics, g.topics) {
		put(groupRecordKey(keyStatePartitions, id), statePartitionsValue(g.topics))
	}
	for _, mid := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[mid]
		var pm *member
		if prev != nil {
			pm = prev.members[mid]
		}
		if pm == nil || pm.clientID != m.clientID || pm.host != m.host || !slices.Equal(pm.topics, m.topics) ||
			(pm.rack == nil) != (m.rack == nil) || (pm.rack != nil && *pm.rack != *m.rack) {
			put(groupRecordKey(keyMemberMetadata, id, mid), memberMetadataValue(m))
		}
		if pm == nil || !pm.targetLogged || !maps.Equal(pm.assigned, m.assigned) {
			put(groupRecordKey(keyTargetMember, id, mid), targetMemberValue(m))
		}
		m.targetLogged = true
		if pm == nil || pm.epoch != m.epoch || pm.prevEpoch != m.prevEpoch || !maps.Equal(pm.assigned, m.assigned) {
			put(groupRecordKey(keyCurrentAssignment, id, mid), currentAssignmentValue(m))
		}
	}
	if prev != nil {
		for _, mid := range slices.Sorted(maps.Keys(prev.members)) {
			if g.members[mid] == nil {
				put(groupRecordKey(keyMemberMetadata, id, mid), nil)
				put(groupRecordKey(keyTargetMember, id, mid), nil)
				put(groupRecordKey(keyCurrentAssignment, id, mid), nil)
			}
		}
	}
	return out
}

// replayGroup rebuilds a share group from its live records (the last per
// key; tombstones already applied), with every member seen at nowMs.
// Topic names are resolved to ids through topics. A record that does not
// decode is an error; records of other key versions are ignored.
func replayGroup(id string, recs []LogRecord, nowMs int64, topics func(string) (TopicMeta, bool)) (*shareGroup, error) {
	g := &shareGroup{id: id, members: map[string]*member{}, topics: map[string]TopicMeta{}}
	get := func(mid string) *member {
		m := g.members[mid]
		if m == nil {
			m = &member{id: mid, lastSeenMs: nowMs, assigned: map[[16]byte]int32{}, assignedNames: map[[16]byte]string{}}
			g.members[mid] = m
		}
		return m
	}
	meta := false
	targetEpoch := int32(-1)
	targets := map[string]map[[16]byte]int32{}
	for _, rec := range recs {
		if rec.Value == nil {
			continue
		}
		v, gid, mid, err := groupRecordKeyOf(rec.Key)
		if err != nil {
			return nil, err
		}
		if gid != id {
			return nil, fmt.Errorf("%w: a record of group %q among %q's", ErrCorruptGroupRecord, gid, id)
		}
		r := newValueReader(rec.Value)
		switch v {
		case keyGroupMetadata:
			g.epoch, meta = r.Int32(), true
			err = r.done("share group metadata")
		case keyStatePartitions:
			for n := r.ArrayLen(); n > 0 && r.Ok(); n-- {
				tid := r.Uuid()
				name := r.CompactString()
				ps := r.Int32s()
				r.SkipTags()
				g.topics[name] = TopicMeta{ID: tid, Partitions: int32(len(ps))}
			}
			for n := r.ArrayLen(); n > 0 && r.Ok(); n-- { // deleting topics
				r.Uuid()
				r.CompactString()
				r.SkipTags()
			}
			err = r.done("share group state partition metadata")
		case keyMemberMetadata:
			m := get(mid)
			m.rack = r.CompactNullableString()
			m.clientID = r.CompactString()
			m.host = r.CompactString()
			m.topics = nil
			for n := r.ArrayLen(); n > 0 && r.Ok(); n-- {
				m.topics = append(m.topics, r.CompactString())
			}
			err = r.done("share group member metadata")
		case keyTargetMetadata:
			targetEpoch = r.Int32()
			err = r.done("share group target assignment metadata")
		case keyTargetMember:
			targets[mid] = r.readPartitions()
			err = r.done("share group target assignment member")
		case keyCurrentAssignment:
			m := get(mid)
			m.epoch, m.prevEpoch = r.Int32(), r.Int32()
			r.Int8()
			m.assigned = r.readPartitions()
			err = r.done("share group current member assignment")
		}
		if err != nil {
			return nil, err
		}
	}
	if !meta {
		return nil, fmt.Errorf("%w: share group %q has no metadata record", ErrCorruptGroupRecord, id)
	}
	// The target records are the log's when they say what the group and
	// its members hold (the target is the current assignment); else they
	// are written at the next change.
	g.targetLogged = targetEpoch == g.epoch
	for mid, m := range g.members {
		t, ok := targets[mid]
		m.targetLogged = ok && maps.Equal(t, m.assigned)
	}
	for _, m := range g.members {
		m.assignedNames = map[[16]byte]string{}
		for _, t := range m.topics {
			if tm, ok := topics(t); ok {
				if _, ok := m.assigned[tm.ID]; ok {
					m.assignedNames[tm.ID] = t
				}
			}
		}
	}
	return g, nil
}
