package controlplane

import (
	"slices"
	"testing"
)

func liveSet(ids ...int32) func(int32) bool {
	return func(b int32) bool { return slices.Contains(ids, b) }
}

func ps(leader, epoch int32, replicas, isr []int32) PartitionState {
	return PartitionState{Topic: "t", Leader: leader, LeaderEpoch: epoch, Replicas: replicas, ISR: isr}
}

func TestElectOnBrokerChange(t *testing.T) {
	cases := []struct {
		name       string
		st         PartitionState
		live       []int32
		unclean    bool
		wantLeader int32
		wantEpoch  int32
		wantISR    []int32
		changed    bool
	}{
		{"all live, nothing to do", ps(1, 3, []int32{1, 2, 3}, []int32{1, 2, 3}), []int32{1, 2, 3}, false, 1, 3, []int32{1, 2, 3}, false},
		{"follower dies: ISR shrinks, leader stays", ps(1, 3, []int32{1, 2, 3}, []int32{1, 2, 3}), []int32{1, 2}, false, 1, 3, []int32{1, 2}, true},
		{"leader dies: next ISR replica in assignment order", ps(1, 3, []int32{1, 2, 3}, []int32{3, 1, 2}), []int32{2, 3}, false, 2, 4, []int32{3, 2}, true},
		{"leader dies, only out-of-sync replicas live: offline", ps(1, 3, []int32{1, 2, 3}, []int32{1}), []int32{2, 3}, false, -1, 4, []int32{1}, true},
		{"same, unclean allowed: first live replica, ISR reset", ps(1, 3, []int32{1, 2, 3}, []int32{1}), []int32{2, 3}, true, 2, 4, []int32{2}, true},
		{"everyone dead: last ISR member kept", ps(2, 5, []int32{1, 2, 3}, []int32{2, 3}), nil, false, -1, 6, []int32{2}, true},
		{"offline partition, last leader returns", ps(-1, 6, []int32{1, 2, 3}, []int32{2}), []int32{2}, false, 2, 7, []int32{2}, true},
		{"offline partition, an out-of-sync replica returns: still offline", ps(-1, 6, []int32{1, 2, 3}, []int32{2}), []int32{3}, false, -1, 6, []int32{2}, false},
	}
	for _, c := range cases {
		d := ElectOnBrokerChange(c.st, liveSet(c.live...), c.unclean)
		if d.State.Leader != c.wantLeader || d.State.LeaderEpoch != c.wantEpoch || !slices.Equal(d.State.ISR, c.wantISR) || d.Changed != c.changed {
			t.Errorf("%s: leader %d epoch %d isr %v changed %v; want %d %d %v %v", c.name,
				d.State.Leader, d.State.LeaderEpoch, d.State.ISR, d.Changed, c.wantLeader, c.wantEpoch, c.wantISR, c.changed)
		}
		if d.Changed == false && d.LeaderChanged {
			t.Errorf("%s: leader changed without a change", c.name)
		}
	}
}

// TestElectionNeverLosesTheISR: whatever brokers are live, the new leader is
// either an ISR member or (unclean only) a live replica; the ISR is never
// empty and only shrinks to live members or the last one standing.
func TestElectionNeverLosesTheISR(t *testing.T) {
	replicas := []int32{1, 2, 3}
	for mask := 0; mask < 8; mask++ {
		var live []int32
		for i, r := range replicas {
			if mask&(1<<i) != 0 {
				live = append(live, r)
			}
		}
		for isrMask := 1; isrMask < 8; isrMask++ {
			var isr []int32
			for i, r := range replicas {
				if isrMask&(1<<i) != 0 {
					isr = append(isr, r)
				}
			}
			for _, leader := range isr {
				st := ps(leader, 0, replicas, isr)
				d := ElectOnBrokerChange(st, liveSet(live...), false)
				if len(d.State.ISR) == 0 {
					t.Fatalf("live %v isr %v: empty ISR", live, isr)
				}
				for _, m := range d.State.ISR {
					if !slices.Contains(isr, m) {
						t.Fatalf("live %v isr %v: %d joined the ISR", live, isr, m)
					}
				}
				if l := d.State.Leader; l >= 0 && (!slices.Contains(isr, l) || !slices.Contains(live, l)) {
					t.Fatalf("live %v isr %v: clean election chose %d", live, isr, l)
				}
				if d.LeaderChanged != (d.State.LeaderEpoch == 1) {
					t.Fatalf("epoch must move exactly when the leader does")
				}
			}
		}
	}
}

func TestElectPreferredAndMoveAway(t *testing.T) {
	st := ps(2, 4, []int32{1, 2, 3}, []int32{1, 2, 3})
	if d := ElectPreferred(st, liveSet(1, 2, 3)); d.State.Leader != 1 || d.State.LeaderEpoch != 5 {
		t.Fatalf("preferred: %+v", d.State)
	}
	if d := ElectPreferred(st, liveSet(2, 3)); d.Changed {
		t.Fatalf("preferred replica dead: no change expected: %+v", d.State)
	}
	d := MoveLeaderAway(st, 2, liveSet(1, 2, 3), 1)
	if d.State.Leader != 1 || slices.Contains(d.State.ISR, 2) || d.State.LeaderEpoch != 5 {
		t.Fatalf("move away: %+v", d.State)
	}
	solo := ps(2, 4, []int32{2}, []int32{2})
	if d := MoveLeaderAway(solo, 2, liveSet(2), 1); d.Changed {
		t.Fatalf("a single replica keeps leading through a clean stop: %+v", d.State)
	}
}

// TestLiveForOfflineReplica: a broker that reports a partition's replica
// offline is dead for that partition alone: an offline leader is replaced
// by an ISR member, an offline follower leaves the ISR, an offline last
// ISR member leaves the partition without a leader, and another
// partition of the same broker is untouched.
func TestLiveForOfflineReplica(t *testing.T) {
	id := TopicID{1}
	other := TopicID{2}
	offline := map[int32][]OfflineReplica{1: {{TopicID: id, Partition: 0}}}
	at := func(st PartitionState, topic TopicID, p int32) PartitionState {
		st.TopicID, st.Partition = topic, p
		return st
	}
	cases := []struct {
		name       string
		st         PartitionState
		wantLeader int32
		wantISR    []int32
	}{
		{"offline leader: another ISR member leads", at(ps(1, 3, []int32{1, 2, 3}, []int32{1, 2, 3}), id, 0), 2, []int32{2, 3}},
		{"offline follower: out of the ISR", at(ps(2, 3, []int32{2, 1, 3}, []int32{2, 1, 3}), id, 0), 2, []int32{2, 3}},
		{"offline last ISR member: no leader", at(ps(1, 3, []int32{1, 2, 3}, []int32{1}), id, 0), -1, []int32{1}},
		{"another partition of the broker", at(ps(1, 3, []int32{1, 2, 3}, []int32{1, 2, 3}), id, 1), 1, []int32{1, 2, 3}},
		{"another topic of the broker", at(ps(1, 3, []int32{1, 2, 3}, []int32{1, 2, 3}), other, 0), 1, []int32{1, 2, 3}},
	}
	for _, c := range cases {
		d := Elect(c.st, View{Live: LiveFor(c.st, liveSet(1, 2, 3), offline), MinISR: 1})
		if d.State.Leader != c.wantLeader || !slices.Equal(d.State.ISR, c.wantISR) {
			t.Errorf("%s: leader %d isr %v; want %d %v", c.name, d.State.Leader, d.State.ISR, c.wantLeader, c.wantISR)
		}
	}
}

// TestReconcileFencesReregisteredLeader: the controller stamps the
// leader's registration incarnation into the record the first time it sees
// it (no epoch bump), bumps the leader epoch when the same leader has
// registered again with another incarnation (a restart), and leaves a
// record whose leader's incarnation is the stamped one alone. A leader
// change made elsewhere clears the stamp for the controller to set.
func TestReconcileFencesReregisteredLeader(t *testing.T) {
	incs := map[int32]string{1: "a", 2: "b", 3: "c"}
	v := View{Live: liveSet(1, 2, 3), MinISR: 1, Incarnation: func(b int32) string { return incs[b] }}
	st := ps(1, 4, []int32{1, 2, 3}, []int32{1, 2, 3})

	d := ReconcilePartition(st, v)
	if !d.Changed || d.Reregistered || d.State.LeaderEpoch != 4 || d.State.LeaderIncarnation != "a" {
		t.Fatalf("first sight: %+v; want the incarnation stamped at epoch 4", d)
	}
	st = d.State
	if d := ReconcilePartition(st, v); d.Changed {
		t.Fatalf("same incarnation: changed to %+v", d.State)
	}
	incs[1] = "a2" // node 1 restarted and registered again
	d = ReconcilePartition(st, v)
	if !d.Changed || !d.Reregistered || d.LeaderChanged || d.State.Leader != 1 || d.State.LeaderEpoch != 5 || d.State.LeaderIncarnation != "a2" {
		t.Fatalf("re-registered leader: %+v; want leader 1 at epoch 5 with incarnation a2", d)
	}
	st = d.State
	moved := MoveLeaderAway(st, 1, liveSet(1, 2, 3), 1)
	if moved.State.Leader != 2 || moved.State.LeaderIncarnation != "" {
		t.Fatalf("controlled shutdown: %+v; want leader 2 with no incarnation yet", moved.State)
	}
	d = ReconcilePartition(moved.State, v)
	if d.Reregistered || d.State.LeaderEpoch != moved.State.LeaderEpoch || d.State.LeaderIncarnation != "b" {
		t.Fatalf("after a move: %+v; want node 2's incarnation stamped at epoch %d", d, moved.State.LeaderEpoch)
	}
	// An election by the controller stamps the new leader at once (node
	// 1 left the ISR at its controlled shutdown: node 3 is elected).
	d = ReconcilePartition(d.State, View{Live: liveSet(1, 3), MinISR: 1, Incarnation: v.Incarnation})
	if !d.LeaderChanged || d.Reregistered || d.State.Leader != 3 || d.State.LeaderIncarnation != "c" {
		t.Fatalf("election: %+v; want leader 3 stamped c", d)
	}
}

// TestMoveLeaderAwayKeepsTheStoppingLeaderEligible: a leader's controlled
// shutdown with the ISR at min.insync.replicas leaves the other member alone
// in the ISR; the stopping leader, which holds every acknowledged record,
// joins the ELR in the same change (KIP-966), so that it can lead again if
// the member it handed leadership to is lost. An offline log (minISR 0)
// joins no ELR.
func TestMoveLeaderAwayKeepsTheStoppingLeaderEligible(t *testing.T) {
	st := ps(1, 3, []int32{1, 2, 3}, []int32{1, 2})
	d := MoveLeaderAway(st, 1, liveSet(1, 2), 2)
	if d.State.Leader != 2 || !slices.Equal(d.State.ISR, []int32{2}) || !slices.Equal(d.State.ELR, []int32{1}) {
		t.Fatalf("controlled shutdown: %s elr %v; want leader 2, ISR [2], ELR [1]", stateString(d.State), d.State.ELR)
	}
	// The new leader is lost; the old one is back from a clean stop
	// (trusted): it leads.
	d = Elect(d.State, View{Live: liveSet(1), MinISR: 2})
	if d.State.Leader != 1 {
		t.Fatalf("the stopped leader back: %s elr %v; want leader 1", stateString(d.State), d.State.ELR)
	}
	if d := MoveLeaderAway(st, 1, liveSet(1, 2), 0); d.State.Leader != 2 || len(d.State.ELR) != 0 {
		t.Fatalf("offline log: %s elr %v; want leader 2, no ELR", stateString(d.State), d.State.ELR)
	}
}
