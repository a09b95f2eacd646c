package replica

import (
	"testing"
	"time"

	"github.com/shale-io/shale/partition"
)

// TestFollowersSilent is the evidence a leader whose session expired
// steps down on: every follower the controller could elect instead has
// stopped fetching (issue 24 item 3). While the whole control plane is
// down the followers go on fetching, and the leader keeps serving.
func TestFollowersSilent(t *testing.T) {
	now := time.Now()
	const quiet = 2 * time.Second
	since := now.Add(-time.Minute) // became leader
	fetched := func(id int32, ago time.Duration) partition.FollowerStatus {
		return partition.FollowerStatus{ID: id, Heard: true, LastFetch: now.Add(-ago)}
	}
	never := func(id int32) partition.FollowerStatus { return partition.FollowerStatus{ID: id} }
	leader := func(isr []int32, fs ...partition.FollowerStatus) partition.Status {
		return partition.Status{Leader: true, Self: 1, LeaderSince: since, Replicas: []int32{1, 2, 3}, ISR: isr, Followers: fs}
	}
	for _, c := range []struct {
		name              string
		st                partition.Status
		unclean           bool
		electable, silent bool
	}{
		{"a follower is no leader", partition.Status{Self: 1, ISR: []int32{1, 2}}, false, false, false},
		{"both ISR followers fetching (the control plane down for everyone)",
			leader([]int32{1, 2, 3}, fetched(2, 100*time.Millisecond), fetched(3, time.Second)), false, true, false},
		{"both ISR followers gone to a newer epoch",
			leader([]int32{1, 2, 3}, fetched(2, 3*time.Second), fetched(3, 5*time.Second)), false, true, true},
		{"one ISR follower still fetching: it has not seen a newer epoch",
			leader([]int32{1, 2, 3}, fetched(2, 3*time.Second), fetched(3, 100*time.Millisecond)), false, true, false},
		{"an ISR follower never heard since the leadership began a minute ago",
			leader([]int32{1, 2}, never(2), fetched(3, 100*time.Millisecond)), false, true, true},
		{"ISR of one: nobody the controller could elect",
			leader([]int32{1}, fetched(2, 10*time.Second), never(3)), false, false, false},
		{"ISR of one with unclean election: the others could be elected",
			leader([]int32{1}, fetched(2, 10*time.Second), never(3)), true, true, true},
		{"RF=1", partition.Status{Leader: true, Self: 1, LeaderSince: since, Replicas: []int32{1}, ISR: []int32{1}}, true, false, false},
		{"exactly quiet ago is not silent yet",
			leader([]int32{1, 2}, fetched(2, quiet)), false, true, false},
	} {
		electable, silent := followersSilent(c.st, c.unclean, now, quiet)
		if electable != c.electable || silent != c.silent {
			t.Errorf("%s: electable %v silent %v, want %v %v", c.name, electable, silent, c.electable, c.silent)
		}
	}
}
