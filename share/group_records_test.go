package share

import (
	"testing"
)

// applyLog keeps the last record per key (a tombstone deletes), as the
// group coordinator does.
func applyLog(live map[string][]byte, recs []LogRecord) []LogRecord {
	for _, r := range recs {
		if r.Value == nil {
			delete(live, string(r.Key))
		} else {
			live[string(r.Key)] = r.Value
		}
	}
	var out []LogRecord
	for k, v := range live {
		out = append(out, LogRecord{Key: []byte(k), Value: v})
	}
	return out
}

// The records of a group's changes, replayed, give back its epoch,
// members, epochs, subscriptions and assignments; a member that left and
// a deleted group leave nothing.
func TestGroupRecordsReplay(t *testing.T) {
	tid := [16]byte{1, 2, 3}
	topics := func(n string) (TopicMeta, bool) {
		if n == "jobs" {
			return TopicMeta{ID: tid, Partitions: 3}, true
		}
		return TopicMeta{}, false
	}
	g := &shareGroup{id: "sg", members: map[string]*member{}, topics: map[string]TopicMeta{}}
	live := map[string][]byte{}
	var prev *shareGroup
	step := func(change func(g *shareGroup)) {
		next := g.clone()
		change(next)
		applyLog(live, groupRecords("sg", prev, next))
		prev, g = next, next
	}
	rack := "r1"
	step(func(g *shareGroup) {
		for _, id := range []string{"m1", "m2"} {
			m := &member{id: id, clientID: "c-" + id, host: "/127.0.0.1", topics: []string{"jobs", "missing"}, rack: &rack}
			g.members[id] = m
			g.assign(m, topics)
		}
	})
	step(func(g *shareGroup) { delete(g.members, "m2"); g.epoch++ })
	got, err := replayGroup("sg", applyLog(live, nil), 7, topics)
	if err != nil {
		t.Fatal(err)
	}
	if got.epoch != 3 || len(got.members) != 1 || got.topics["jobs"] != (TopicMeta{ID: tid, Partitions: 3}) {
		t.Fatalf("replayed %+v", got)
	}
	m := got.members["m1"]
	if m.epoch != 1 || m.prevEpoch != 0 || m.clientID != "c-m1" || m.host != "/127.0.0.1" || *m.rack != "r1" ||
		m.assigned[tid] != 3 || m.assignedNames[tid] != "jobs" || len(m.topics) != 2 || m.lastSeenMs != 7 {
		t.Fatalf("replayed member %+v", m)
	}
	if recs := groupRecords("sg", prev, prev.clone()); len(recs) != 0 {
		t.Fatalf("an unchanged group writes %d records", len(recs))
	}
	if recs := applyLog(live, groupRecords("sg", prev, nil)); len(recs) != 0 {
		t.Fatalf("a deleted group leaves %d records", len(recs))
	}
}

// FuzzReplayGroup: share group records come from __consumer_offsets,
// which anyone allowed to produce to it can write: the decoders fail,
// never panic.
func FuzzReplayGroup(f *testing.F) {
	m := &member{clientID: "c", host: "h", topics: []string{"t"}, epoch: 2, assigned: map[[16]byte]int32{{1}: 2}}
	f.Add(groupRecordKey(keyCurrentAssignment, "g", "m"), currentAssignmentValue(m))
	f.Add(groupRecordKey(keyMemberMetadata, "g", "m"), memberMetadataValue(m))
	f.Add(groupRecordKey(keyGroupMetadata, "g"), epochValue(3))
	f.Add(groupRecordKey(keyStatePartitions, "g"), statePartitionsValue(map[string]TopicMeta{"t": {ID: [16]byte{1}, Partitions: 2}}))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		none := func(string) (TopicMeta, bool) { return TopicMeta{}, false }
		replayGroup("g", []LogRecord{{Key: groupRecordKey(keyGroupMetadata, "g"), Value: epochValue(1)}, {Key: key, Value: value}}, 0, none)
		groupRecordKeyOf(key)
	})
}
