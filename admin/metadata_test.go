package admin

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/controlplane"
)

// TestPartitionMetadataHidesUnreachableLeaders: a leader the answer does
// not list as a broker is no leader to the client. Before this, a partition
// whose leader had died (its registration gone, no election yet) was
// answered with that leader; franz-go then failed produces with "unknown
// broker" after two metadata refreshes, and a transactional producer with a
// fatal error (seen in TestExactlyOnceUnderKills under load).
func TestPartitionMetadataHidesUnreachableLeaders(t *testing.T) {
	st := controlplane.PartitionState{Partition: 4, Leader: 2, LeaderEpoch: 7, Replicas: []int32{2, 1, 3}, ISR: []int32{2, 1}}
	all := map[int32]bool{1: true, 2: true, 3: true}
	for _, tc := range []struct {
		name               string
		st                 controlplane.PartitionState
		v                  int16
		registered, listed map[int32]bool
		leader             int32
		code               int16
		offline            []int32
	}{
		{"leader listed", st, 12, all, all, 2, 0, nil},
		{"leader died, not yet replaced", st, 12, map[int32]bool{1: true, 3: true}, map[int32]bool{1: true, 3: true}, -1, kerr.LeaderNotAvailable.Code, []int32{2}},
		{"leader without the client's listener", st, 12, all, map[int32]bool{1: true, 3: true}, -1, kerr.ListenerNotFound.Code, nil},
		{"leader without the client's listener, v5", st, 5, all, map[int32]bool{1: true, 3: true}, -1, kerr.LeaderNotAvailable.Code, nil},
		{"no leader", controlplane.PartitionState{Partition: 4, Leader: -1, Replicas: []int32{2}}, 12, map[int32]bool{}, map[int32]bool{}, -1, kerr.LeaderNotAvailable.Code, []int32{2}},
		{"a follower died", st, 12, map[int32]bool{1: true, 2: true}, map[int32]bool{1: true, 2: true}, 2, 0, []int32{3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mp := partitionMetadata(tc.st, tc.v, tc.registered, tc.listed)
			if mp.Leader != tc.leader || mp.ErrorCode != tc.code || !slices.Equal(mp.OfflineReplicas, tc.offline) {
				t.Fatalf("leader %d error %d offline %v, want leader %d error %d offline %v",
					mp.Leader, mp.ErrorCode, mp.OfflineReplicas, tc.leader, tc.code, tc.offline)
			}
			if mp.Partition != tc.st.Partition || mp.LeaderEpoch != tc.st.LeaderEpoch || !slices.Equal(mp.Replicas, tc.st.Replicas) || !slices.Equal(mp.ISR, tc.st.ISR) {
				t.Fatalf("partition %d epoch %d replicas %v isr %v changed", mp.Partition, mp.LeaderEpoch, mp.Replicas, mp.ISR)
			}
		})
	}
}

// TestReportedControllerIsListed: the controller id of a Metadata or
// DescribeCluster answer is always a broker the same answer lists (or -1):
// the lease's holder when listed, else the answering node, as a KRaft
// broker names any live broker. Before, a node whose cache had a new
// holder's lease but not yet its registration named it anyway, and
// franz-go failed the admin request (seen in TestUnregisterBroker on a
// busy machine).
func TestReportedControllerIsListed(t *testing.T) {
	for _, c := range []struct {
		holder, self int32
		listed       map[int32]bool
		want         int32
	}{
		{4, 1, map[int32]bool{1: true, 2: true, 4: true}, 4},
		{4, 1, map[int32]bool{1: true, 2: true, 3: true}, 1},
		{-1, 2, map[int32]bool{1: true, 2: true}, 2},
		{4, 1, map[int32]bool{2: true}, -1},
		{-1, 1, map[int32]bool{}, -1},
	} {
		if got := reportedController(c.holder, c.self, c.listed); got != c.want {
			t.Errorf("holder %d, self %d, listed %v: %d, want %d", c.holder, c.self, c.listed, got, c.want)
		}
	}
}
