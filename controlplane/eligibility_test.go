package controlplane

import (
	"slices"
	"testing"
)

// trustOf builds a View.Trust from per-broker trust and reports.
func trustOf(pending []int32, reported map[int32]ReplicaLog) func(int32) (Trust, ReplicaLog) {
	return func(b int32) (Trust, ReplicaLog) {
		if slices.Contains(pending, b) {
			return Pending, ReplicaLog{}
		}
		if l, ok := reported[b]; ok {
			return Reported, l
		}
		return Trusted, ReplicaLog{}
	}
}

func withELR(st PartitionState, elr ...int32) PartitionState {
	st.ELR = elr
	return st
}

func TestElect(t *testing.T) {
	full := func(end int64) ReplicaLog { return ReplicaLog{LastEpoch: 0, LogEnd: end} }
	cases := []struct {
		name     string
		st       PartitionState
		live     []int32
		pending  []int32
		reported map[int32]ReplicaLog
		minISR   int
		want     PartitionState
	}{
		{"followers fenced below min.insync: they join the ELR, the leader stays",
			ps(1, 0, []int32{1, 2, 3}, []int32{1, 2, 3}), []int32{1}, nil, nil, 2,
			withELR(ps(1, 0, []int32{1, 2, 3}, []int32{1}), 2, 3)},
		{"one follower fenced, ISR still at min.insync: no ELR",
			ps(1, 0, []int32{1, 2, 3}, []int32{1, 2, 3}), []int32{1, 2}, nil, nil, 2,
			ps(1, 0, []int32{1, 2, 3}, []int32{1, 2})},
		{"the ISR back at min.insync clears the ELR",
			withELR(ps(1, 0, []int32{1, 2, 3}, []int32{1, 2}), 3), []int32{1, 2, 3}, nil, nil, 2,
			ps(1, 0, []int32{1, 2, 3}, []int32{1, 2})},
		{"everyone dead: the last ISR member is kept, the ELR stays",
			withELR(ps(1, 0, []int32{1, 2, 3}, []int32{1}), 2, 3), nil, nil, nil, 2,
			withELR(ps(-1, 1, []int32{1, 2, 3}, []int32{1}), 2, 3)},
		{"a trusted ELR member leads when the last ISR member is away; the ISR member joins the ELR",
			withELR(ps(-1, 1, []int32{1, 2, 3}, []int32{1}), 2, 3), []int32{3}, nil, nil, 2,
			withELR(ps(3, 2, []int32{1, 2, 3}, []int32{3}), 1, 2)},
		{"the last ISR member returns clean: it leads",
			withELR(ps(-1, 1, []int32{1, 2, 3}, []int32{1}), 2, 3), []int32{1}, nil, nil, 2,
			withELR(ps(1, 2, []int32{1, 2, 3}, []int32{1}), 2, 3)},
		{"the last ISR member returns uncleanly, not reported yet: offline",
			withELR(ps(-1, 1, []int32{1, 2, 3}, []int32{1}), 2, 3), []int32{1}, []int32{1}, nil, 2,
			withELR(ps(-1, 1, []int32{1, 2, 3}, []int32{1}), 2, 3)},
		{"every candidate returned uncleanly but one is still away: offline",
			withELR(ps(-1, 1, []int32{1, 2, 3}, []int32{1}), 2, 3), []int32{2, 3}, nil,
			map[int32]ReplicaLog{2: full(1000), 3: full(1000)}, 2,
			withELR(ps(-1, 1, []int32{1, 2, 3}, []int32{1}), 2, 3)},
		{"every candidate back and reported: the longest log leads, not the emptied last ISR member; the others stay candidates",
			withELR(ps(-1, 1, []int32{1, 2, 3}, []int32{1}), 2, 3), []int32{1, 2, 3}, nil,
			map[int32]ReplicaLog{1: {LastEpoch: -1}, 2: full(990), 3: full(1000)}, 2,
			withELR(ps(3, 2, []int32{1, 2, 3}, []int32{3}), 1, 2)},
		{"a torn last ISR member loses to an intact ELR member",
			withELR(ps(-1, 1, []int32{1, 2, 3}, []int32{1}), 2), []int32{1, 2}, nil,
			map[int32]ReplicaLog{1: full(650), 2: full(1000)}, 2,
			withELR(ps(2, 2, []int32{1, 2, 3}, []int32{2}), 1)},
		{"a later epoch beats a longer log",
			withELR(ps(-1, 4, []int32{1, 2, 3}, []int32{1}), 2), []int32{1, 2}, nil,
			map[int32]ReplicaLog{1: {LastEpoch: 3, LogEnd: 10}, 2: {LastEpoch: 2, LogEnd: 50}}, 2,
			withELR(ps(1, 5, []int32{1, 2, 3}, []int32{1}), 2)},
		{"a pending candidate blocks the recovery",
			withELR(ps(-1, 1, []int32{1, 2, 3}, []int32{1}), 2), []int32{1, 2}, []int32{2},
			map[int32]ReplicaLog{1: full(1000)}, 2,
			withELR(ps(-1, 1, []int32{1, 2, 3}, []int32{1}), 2)},
		{"an untrusted returning replica stays a candidate while a trusted one leads",
			withELR(ps(-1, 1, []int32{1, 2, 3}, []int32{1}), 2, 3), []int32{2, 3}, []int32{2}, nil, 2,
			withELR(ps(3, 2, []int32{1, 2, 3}, []int32{3}), 1, 2)},
		{"while the leader is live, an untrusted ELR member stays in the ELR",
			withELR(ps(1, 3, []int32{1, 2, 3}, []int32{1}), 2), []int32{1, 2}, []int32{2}, nil, 2,
			withELR(ps(1, 3, []int32{1, 2, 3}, []int32{1}), 2)},
		{"a leader that restarted uncleanly is replaced by a trusted ISR member, and leaves the ISR until it catches up",
			ps(1, 3, []int32{1, 2, 3}, []int32{1, 2}), []int32{1, 2}, []int32{1}, nil, 1,
			ps(2, 4, []int32{1, 2, 3}, []int32{2})},
	}
	for _, c := range cases {
		v := View{Live: liveSet(c.live...), Trust: trustOf(c.pending, c.reported), MinISR: c.minISR}
		d := Elect(c.st, v)
		if !sameState(d.State, c.want) || !slices.Equal(d.State.ELR, c.want.ELR) {
			t.Errorf("%s:\n got %s elr %v\nwant %s elr %v", c.name, stateString(d.State), d.State.ELR, stateString(c.want), c.want.ELR)
		}
	}
}

// TestElectNeverTrustsAnUntrustedCandidate: over every combination of live,
// pending and reported candidates, a clean election (no unclean flag)
// chooses a trusted live candidate, or, only when every candidate is live
// and reported, the one with the longest log.
// TestElectRemovesUncleanMemberFromISR is the chaos suite's mixed schedule,
// seed 106: a node wiped and restarted before its session expired was still
// in the ISR, and ElectLeaders PREFERRED made its empty log the leader's
// (LOST 344). An uncleanly started member leaves the ISR while a trusted one
// remains, so the preferred election cannot pick it.
func TestElectRemovesUncleanMemberFromISR(t *testing.T) {
	st := ps(1, 3, []int32{2, 1, 3}, []int32{1, 2, 3})
	for _, c := range []struct {
		name     string
		pending  []int32
		reported map[int32]ReplicaLog
	}{
		{"not reported yet", []int32{2}, nil},
		{"reported an empty log", nil, map[int32]ReplicaLog{2: {LastEpoch: -1, LogEnd: 0}}},
	} {
		d := Elect(st, View{Live: liveSet(1, 2, 3), Trust: trustOf(c.pending, c.reported), MinISR: 2})
		if want := []int32{1, 3}; !slices.Equal(d.State.ISR, want) || d.State.Leader != 1 || len(d.State.ELR) != 0 {
			t.Errorf("%s: ISR %v ELR %v leader %d; want ISR %v, no ELR, leader 1", c.name, d.State.ISR, d.State.ELR, d.State.Leader, want)
		}
		if p := ElectPreferred(d.State, liveSet(1, 2, 3)); p.State.Leader != 1 {
			t.Errorf("%s: PREFERRED elected %d after the reconcile; want the leader to stay 1", c.name, p.State.Leader)
		}
	}
	// The only live ISR member restarted uncleanly: it stays (the longest-log
	// rule decides whether it may lead).
	d := Elect(ps(1, 3, []int32{1, 2, 3}, []int32{1}), View{Live: liveSet(1, 2, 3), Trust: trustOf([]int32{1}, nil), MinISR: 2})
	if !slices.Equal(d.State.ISR, []int32{1}) {
		t.Errorf("last ISR member, unclean: ISR %v; want [1]", d.State.ISR)
	}
}

func TestElectNeverTrustsAnUntrustedCandidate(t *testing.T) {
	st := withELR(ps(-1, 1, []int32{1, 2, 3}, []int32{1}), 2, 3)
	ends := map[int32]ReplicaLog{1: {LogEnd: 5}, 2: {LogEnd: 9}, 3: {LogEnd: 7}}
	for mask := 0; mask < 27; mask++ { // each broker dead, pending or reported
		var live, pending []int32
		reported := map[int32]ReplicaLog{}
		m := mask
		for b := int32(1); b <= 3; b++ {
			switch m % 3 {
			case 0: // dead
			case 1:
				live = append(live, b)
				pending = append(pending, b)
			case 2:
				live = append(live, b)
				reported[b] = ends[b]
			}
			m /= 3
		}
		d := Elect(st, View{Live: liveSet(live...), Trust: trustOf(pending, reported), MinISR: 2})
		l := d.State.Leader
		allReported := len(reported) == 3
		switch {
		case allReported && l != 2:
			t.Errorf("live %v pending %v: leader %d, want 2 (the longest log)", live, pending, l)
		case !allReported && l >= 0:
			t.Errorf("live %v pending %v reported %v: leader %d elected without the longest log known", live, pending, reported, l)
		}
	}
}

func TestEligibility(t *testing.T) {
	id := NewTopicID()
	st := PartitionState{TopicID: id, Partition: 0, LeaderEpoch: 5}
	clean := Broker{NodeID: 1}
	unclean := Broker{NodeID: 1, UncleanStart: true}
	report := ReplicaLog{TopicID: id, Partition: 0, LeaderEpoch: 5, LogEnd: 7}
	cases := []struct {
		name     string
		b        Broker
		logs     []ReplicaLog
		reported bool
		want     Trust
	}{
		{"clean start", clean, nil, false, Trusted},
		{"unclean, not reported", unclean, nil, false, Pending},
		{"unclean, reported this partition at its epoch", unclean, []ReplicaLog{report}, true, Reported},
		{"unclean, report made at an older epoch: still the same candidacy", unclean, []ReplicaLog{{TopicID: id, LeaderEpoch: 4}}, true, Reported},
		{"unclean, not a candidate of this partition", unclean, []ReplicaLog{{TopicID: id, Partition: 1, LeaderEpoch: 5}}, true, Trusted},
	}
	for _, c := range cases {
		if got, _ := Eligibility(st, c.b, c.logs, c.reported); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestChangeISR(t *testing.T) {
	st := ps(1, 0, []int32{1, 2, 3}, []int32{1, 2, 3})
	got := ChangeISR(st, []int32{1}, 2)
	if !slices.Equal(got.ISR, []int32{1}) || !slices.Equal(got.ELR, []int32{2, 3}) {
		t.Fatalf("shrink below min.insync: %s elr %v", stateString(got), got.ELR)
	}
	back := ChangeISR(got, []int32{1, 3}, 2)
	if !slices.Equal(back.ISR, []int32{1, 3}) || back.ELR != nil {
		t.Fatalf("expand to min.insync: %s elr %v", stateString(back), back.ELR)
	}
	if s := ChangeISR(st, []int32{1, 2}, 2); s.ELR != nil {
		t.Fatalf("shrink to min.insync: elr %v", s.ELR)
	}
	if s := ChangeISR(withELR(ps(1, 0, []int32{1, 2, 3}, []int32{1}), 2, 3), []int32{1, 2}, 3); !slices.Equal(s.ELR, []int32{3}) {
		t.Fatalf("a member rejoining leaves the ELR: elr %v", s.ELR)
	}
}

// TestElectKeepsAMemberTheLeaderReadmitted is the CI failure of
// TestEmptyDiskRejoinFromBucket: node 1, killed and restarted, reported its
// log as an ELR member; the leader re-admitted it to the ISR by the catch-up
// rule, and the controller, still seeing the report, took it out again
// (ISR [3 1] → [3]), so acks=all produce got NOT_ENOUGH_REPLICAS. A report
// made out of the ISR no longer applies once a later record has the node in
// it; one made in the ISR applies until the node has been seen out of it.
func TestElectKeepsAMemberTheLeaderReadmitted(t *testing.T) {
	st := ps(3, 1, []int32{2, 1, 3}, []int32{3, 1})
	st.PartitionEpoch = 4
	node1 := Broker{NodeID: 1, UncleanStart: true}
	for _, c := range []struct {
		name    string
		report  ReplicaLog
		wantISR []int32
	}{
		{"reported from the ELR, re-admitted later", ReplicaLog{PartitionEpoch: 2, LeaderEpoch: 1, LogEnd: 10}, []int32{3, 1}},
		{"reported from the ISR, never seen out of it", ReplicaLog{PartitionEpoch: 2, LeaderEpoch: 1, LogEnd: 0, InISR: true}, []int32{3}},
		{"reported from the ELR at this very record", ReplicaLog{PartitionEpoch: 4, LeaderEpoch: 1, LogEnd: 0}, []int32{3}},
	} {
		v := View{Live: liveSet(1, 3), MinISR: 2, Trust: func(b int32) (Trust, ReplicaLog) {
			if b == 1 {
				return Eligibility(st, node1, []ReplicaLog{c.report}, true)
			}
			return Trusted, ReplicaLog{}
		}}
		d := Elect(st, v)
		if !slices.Equal(d.State.ISR, c.wantISR) || d.State.Leader != 3 {
			t.Errorf("%s: ISR %v leader %d; want ISR %v, leader 3", c.name, d.State.ISR, d.State.Leader, c.wantISR)
		}
	}
}

// TestElectUncleanReturnsBelowMinISRJoinTheELR is issue 22's clean-clone
// loss as the controller decided it: the ISR held the killed followers
// again (the leader had re-admitted them), the leader was killed, and the
// followers came back uncleanly while the leader's registration was still
// live and trusted. They left the ISR with no ELR, so the leader, back with
// an empty disk, was the only candidate and was elected as the longest log
// of one: the followers truncated the 1,000 acknowledged records.
func TestElectUncleanReturnsBelowMinISRJoinTheELR(t *testing.T) {
	full := ReplicaLog{LastEpoch: 0, LogEnd: 1000, InISR: true}
	st := ps(1, 0, []int32{1, 2, 3}, []int32{1, 2, 3})
	for _, c := range []struct {
		name     string
		pending  []int32
		reported map[int32]ReplicaLog
	}{
		{"not reported yet", []int32{2, 3}, nil},
		{"reported", nil, map[int32]ReplicaLog{2: full, 3: full}},
	} {
		d := Elect(st, View{Live: liveSet(1, 2, 3), Trust: trustOf(c.pending, c.reported), MinISR: 2})
		if !slices.Equal(d.State.ISR, []int32{1}) || !slices.Equal(d.State.ELR, []int32{2, 3}) || d.State.Leader != 1 {
			t.Fatalf("%s: %s elr %v; want leader 1, ISR [1], ELR [2 3]", c.name, stateString(d.State), d.State.ELR)
		}
	}
	reported := map[int32]ReplicaLog{2: full, 3: full}
	d := Elect(st, View{Live: liveSet(1, 2, 3), Trust: trustOf(nil, reported), MinISR: 2})
	// The old leader's registration ends: offline until it has reported.
	d = Elect(d.State, View{Live: liveSet(2, 3), Trust: trustOf(nil, reported), MinISR: 2})
	if d.State.Leader != -1 || !slices.Equal(d.State.ELR, []int32{2, 3}) {
		t.Fatalf("old leader gone: %s elr %v; want no leader, ELR [2 3]", stateString(d.State), d.State.ELR)
	}
	reported[1] = ReplicaLog{LastEpoch: -1, LogEnd: 0, InISR: true, NewDisk: true}
	d = Elect(d.State, View{Live: liveSet(1, 2, 3), Trust: trustOf(nil, reported), MinISR: 2})
	if d.State.Leader != 2 {
		t.Fatalf("old leader back with an empty disk: %s elr %v; want leader 2 (the longest log)", stateString(d.State), d.State.ELR)
	}
}

// TestElectNeverElectsANewDisk: the last ISR member came back with no
// directory for its replica (ReplicaLog.NewDisk) and no ELR: it is not
// elected as the longest log of one, since the replicas outside the ISR
// would truncate every record they hold to its empty log; the partition
// stays offline, or with unclean.leader.election.enable another live
// replica leads.
func TestElectNeverElectsANewDisk(t *testing.T) {
	st := ps(-1, 1, []int32{1, 2, 3}, []int32{1})
	wiped := map[int32]ReplicaLog{1: {LastEpoch: -1, InISR: true, NewDisk: true}}
	v := View{Live: liveSet(1, 2, 3), Trust: trustOf(nil, wiped), MinISR: 2}
	if d := Elect(st, v); d.State.Leader != -1 || d.Changed {
		t.Errorf("clean election: %s; want no leader, no change", stateString(d.State))
	}
	v.Unclean = true
	if d := Elect(st, v); d.State.Leader != 2 {
		t.Errorf("unclean election: %s; want leader 2, the first live replica with its disk", stateString(d.State))
	}
	// Only the wiped node is live: an unclean election still elects it.
	v.Live = liveSet(1)
	if d := Elect(st, v); d.State.Leader != 1 {
		t.Errorf("unclean election, only the wiped node live: %s; want leader 1", stateString(d.State))
	}
	// A torn log (its directory was there) is still weighed.
	torn := map[int32]ReplicaLog{1: {LastEpoch: 0, LogEnd: 650, InISR: true}}
	if d := Elect(st, View{Live: liveSet(1), Trust: trustOf(nil, torn), MinISR: 2}); d.State.Leader != 1 {
		t.Errorf("torn last ISR member: %s; want leader 1, the longest log of its candidates", stateString(d.State))
	}
}

// TestElectRecoveryKeepsTheOtherCandidates: the longest-log recovery elected
// 3 (1,000 records) over 2 (990) and the wiped 1; 3 dies before the others
// rejoin and comes back with a torn log (650). The others were dropped from
// the ELR, so 3 was the only candidate and was elected again, and 2
// truncated 340 records it held; they stay candidates now, and 2 leads.
func TestElectRecoveryKeepsTheOtherCandidates(t *testing.T) {
	full := func(end int64) ReplicaLog { return ReplicaLog{LastEpoch: 0, LogEnd: end} }
	reported := map[int32]ReplicaLog{1: {LastEpoch: -1, NewDisk: true}, 2: full(990), 3: full(1000)}
	st := withELR(ps(-1, 1, []int32{1, 2, 3}, []int32{1}), 2, 3)
	d := Elect(st, View{Live: liveSet(1, 2, 3), Trust: trustOf(nil, reported), MinISR: 2})
	if d.State.Leader != 3 {
		t.Fatalf("recovery: %s elr %v; want leader 3", stateString(d.State), d.State.ELR)
	}
	d = Elect(d.State, View{Live: liveSet(1, 2), Trust: trustOf(nil, reported), MinISR: 2})
	reported[3] = ReplicaLog{LastEpoch: 0, LogEnd: 650}
	d = Elect(d.State, View{Live: liveSet(1, 2, 3), Trust: trustOf(nil, reported), MinISR: 2})
	if d.State.Leader != 2 {
		t.Fatalf("3 back torn: %s elr %v; want leader 2", stateString(d.State), d.State.ELR)
	}
}
