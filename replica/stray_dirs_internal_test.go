package replica

import "testing"

func TestParsePartitionDir(t *testing.T) {
	for _, c := range []struct {
		name  string
		want  replicaKey
		valid bool
	}{
		{"events-0", replicaKey{"events", 0}, true},
		{"a-1-12", replicaKey{"a-1", 12}, true},
		{"__consumer_offsets-49", replicaKey{"__consumer_offsets", 49}, true},
		{"events", replicaKey{}, false},
		{"-3", replicaKey{}, false},
		{"events-", replicaKey{}, false},
		{"events-01", replicaKey{}, false},
		{"events--1", replicaKey{"events-", 1}, true}, // topic names may end in "-"
		{"events-0.deleted", replicaKey{}, false},
		{"events-99999999999", replicaKey{}, false},
	} {
		got, ok := parsePartitionDir(c.name)
		if ok != c.valid || got != c.want {
			t.Errorf("parsePartitionDir(%q) = %+v, %v; want %+v, %v", c.name, got, ok, c.want, c.valid)
		}
	}
}
