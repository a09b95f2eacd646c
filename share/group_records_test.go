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
// members, epochs, subscriptions and assignments; the target assignment
// records (keys 12 and 13) are written with them, and at the first change
// after loading a log without them; a member that left and a deleted
// group leave nothing.
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
	if !got.targetLogged || !m.targetLogged {
		t.Fatalf("replayed target records: group %v, m1 %v; want both written", got.targetLogged, m.targetLogged)
	}
	// The target records (keys 12 and 13) are Kafka's: the assignment
	// epoch, and m1's target, its current assignment.
	tm := newValueReader(live[string(groupRecordKey(keyTargetMetadata, "sg"))])
	if e := tm.Int32(); e != 3 || tm.done("target metadata") != nil {
		t.Fatalf("target assignment metadata: epoch %d, want 3", e)
	}
	tr := newValueReader(live[string(groupRecordKey(keyTargetMember, "sg", "m1"))])
	if a := tr.readPartitions(); len(a) != 1 || a[tid] != 3 || tr.done("target member") != nil {
		t.Fatalf("m1's target: %v, want jobs 0-2", a)
	}
	if _, ok := live[string(groupRecordKey(keyTargetMember, "sg", "m2"))]; ok {
		t.Fatal("m2 left, its target record stays")
	}
	if recs := groupRecords("sg", prev, prev.clone()); len(recs) != 0 {
		t.Fatalf("an unchanged group writes %d records", len(recs))
	}
	// A log an older Shale wrote has no target records: the load's group
	// writes them at its next change, even one that changes nothing else.
	old := map[string][]byte{}
	for k, v := range live {
		if ver, _, _, _ := groupRecordKeyOf([]byte(k)); ver != keyTargetMetadata && ver != keyTargetMember {
			old[k] = v
		}
	}
	loaded, err := replayGroup("sg", applyLog(old, nil), 7, topics)
	if err != nil || loaded.targetLogged || loaded.members["m1"].targetLogged {
		t.Fatalf("replayed without target records: %v, logged %v", err, loaded != nil && loaded.targetLogged)
	}
	recs := groupRecords("sg", loaded, loaded.clone())
	if len(recs) != 2 {
		t.Fatalf("first change after loading an older log: %d records, want the 2 target records", len(recs))
	}
	for _, r := range recs {
		if ver, _, _, _ := groupRecordKeyOf(r.Key); ver != keyTargetMetadata && ver != keyTargetMember {
			t.Fatalf("first change after loading an older log wrote key %d", ver)
		}
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
	f.Add(groupRecordKey(keyTargetMetadata, "g"), epochValue(3))
	f.Add(groupRecordKey(keyTargetMember, "g", "m"), targetMemberValue(m))
	f.Add(groupRecordKey(keyStatePartitions, "g"), statePartitionsValue(map[string]TopicMeta{"t": {ID: [16]byte{1}, Partitions: 2}}))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		none := func(string) (TopicMeta, bool) { return TopicMeta{}, false }
		replayGroup("g", []LogRecord{{Key: groupRecordKey(keyGroupMetadata, "g"), Value: epochValue(1)}, {Key: key, Value: value}}, 0, none)
		groupRecordKeyOf(key)
	})
}
