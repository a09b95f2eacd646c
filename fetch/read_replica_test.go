package fetch

import (
	"testing"
	"time"
)

// TestRackAwareSelect holds rackAwareSelect to Kafka's
// RackAwareReplicaSelector: the leader (-1) without a client rack, when
// it is in the client's rack, or when no follower is; else the follower
// of that rack with the largest log end, then the one caught up most
// recently, then the smallest id.
func TestRackAwareSelect(t *testing.T) {
	f := func(id int32, rack string, leo int64, since time.Duration) readCandidate {
		return readCandidate{id: id, rack: rack, logEnd: leo, sinceCaughtUp: since}
	}
	cases := []struct {
		name               string
		client, leaderRack string
		followers          []readCandidate
		want               int32
	}{
		{"no client rack", "", "a", []readCandidate{f(2, "", 10, 0)}, -1},
		{"leader in the client's rack", "a", "a", []readCandidate{f(2, "a", 10, 0)}, -1},
		{"no follower in the client's rack", "c", "a", []readCandidate{f(2, "b", 10, 0)}, -1},
		{"no followers", "b", "a", nil, -1},
		{"the follower of the rack", "b", "a", []readCandidate{f(2, "b", 10, 0), f(3, "c", 10, 0)}, 2},
		{"the largest log end", "b", "a", []readCandidate{f(2, "b", 9, 0), f(3, "b", 10, time.Second)}, 3},
		{"then the latest caught up", "b", "a", []readCandidate{f(2, "b", 10, time.Second), f(3, "b", 10, time.Millisecond)}, 3},
		{"then the smallest id", "b", "a", []readCandidate{f(4, "b", 10, 0), f(3, "b", 10, 0)}, 3},
	}
	for _, c := range cases {
		if got := rackAwareSelect(c.client, c.leaderRack, c.followers); got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
}
