package group_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestClassicGroupMigratesOnline: a franz-go classic group (cooperative-
// sticky, and the eager range balancer) is migrated to the KIP-848
// consumer protocol by replacing its members one by one with
// ServerSideBalancer members while records flow and everyone commits:
// the group is upgraded when the first KIP-848 member joins, the classic
// members keep being served through JoinGroup/SyncGroup/Heartbeat, and no
// record is consumed twice (each member commits what it consumed before
// giving a partition up, so the uncommitted tail at each hand-over is
// empty) nor missed.
func TestClassicGroupMigratesOnline(t *testing.T) {
	for _, c := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
		{"range", kgo.RangeBalancer()},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := testnode.Start(t, t.TempDir(), fastConsumerGroups)
			addr := n.KafkaAddr()
			adm := kadm.NewClient(testnode.Client(t, addr))
			topic, grp := "migrate-"+c.name, "migrate-"+c.name+"-group"
			const per = 200
			testnode.CreateTopic(t, adm, topic, 6)
			seen := testnode.NewSeenSet()
			ends := testnode.Ends{}
			produce := func(tag string) { ends.Produce(t, addr, topic, per, tag) }
			var classic []*testnode.Member
			for range 3 {
				classic = append(classic, testnode.StartMember(t, addr, grp, topic, c.balancer, seen))
			}
			produce("a")
			testnode.WaitStable(t, adm, grp, 3)
			desc := testnode.Client(t, addr)
			tags := []string{"a"}
			for i, cm := range classic {
				start848Member(t, addr, grp, topic, seen)
				tag := fmt.Sprintf("up%d", i)
				produce(tag)
				tags = append(tags, tag)
				g := wait848Stable(t, desc, grp, 4)
				classicLeft := 0
				for _, m := range g.Members {
					if m.MemberType == 0 {
						classicLeft++
					}
				}
				if classicLeft != 3-i {
					t.Fatalf("after %d replacements: %d classic members in the consumer group, want %d", i, classicLeft, 3-i)
				}
				cm.Stop()
				wait848Stable(t, desc, grp, 3)
			}
			produce("z")
			tags = append(tags, "z")
			g := wait848Stable(t, desc, grp, 3)
			for _, m := range g.Members {
				if m.MemberType != 1 {
					t.Errorf("member %s of type %d after the migration, want 1 (consumer protocol)", m.MemberID, m.MemberType)
				}
			}
			waitConsumedOnce(t, adm, seen, grp, topic, tags, per, ends)
		})
	}
}

// TestConsumerGroupDowngradesOnline: classic members joining a KIP-848
// group are served through it; when the last KIP-848 member leaves, the
// group becomes a classic group again, with every record consumed once.
func TestConsumerGroupDowngradesOnline(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), fastConsumerGroups)
	addr := n.KafkaAddr()
	adm := kadm.NewClient(testnode.Client(t, addr))
	const topic, grp, per = "downgrade", "downgrade-group", 200
	testnode.CreateTopic(t, adm, topic, 6)
	seen := testnode.NewSeenSet()
	ends := testnode.Ends{}
	produce := func(tag string) { ends.Produce(t, addr, topic, per, tag) }
	desc := testnode.Client(t, addr)
	k1 := start848Member(t, addr, grp, topic, seen)
	k2 := start848Member(t, addr, grp, topic, seen)
	produce("a")
	wait848Stable(t, desc, grp, 2)
	testnode.StartMember(t, addr, grp, topic, kgo.CooperativeStickyBalancer(), seen)
	testnode.StartMember(t, addr, grp, topic, kgo.CooperativeStickyBalancer(), seen)
	produce("b")
	wait848Stable(t, desc, grp, 4)
	k1.Stop()
	produce("c")
	wait848Stable(t, desc, grp, 3)
	k2.Stop()
	produce("d")
	testnode.WaitStable(t, adm, grp, 2)
	if d, err := adm.DescribeGroups(proctest.Context(t, 10e9), grp); err != nil || d[grp].Protocol != "cooperative-sticky" {
		t.Fatalf("after the downgrade: %+v %v", d[grp], err)
	}
	waitConsumedOnce(t, adm, seen, grp, topic, []string{"a", "b", "c", "d"}, per, ends)
}
