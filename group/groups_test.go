package group_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

func TestGroupConsumeAndCommit(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	addr := n.KafkaAddr()
	adm := kadm.NewClient(testnode.Client(t, addr))
	testnode.CreateTopic(t, adm, "gc", 3)
	ends := testnode.ProduceN(t, addr, "gc", 300, "v")

	cl := testnode.Client(t, addr, kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("gc"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(6*time.Second))
	ctx := proctest.Context(t, 60*time.Second)
	seen := map[string]bool{}
	for len(seen) < 300 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 300", len(seen))
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := testnode.Committed(t, adm, "g1")
	for p, end := range ends {
		o, ok := got.Lookup("gc", p)
		if !ok || o.At != end {
			t.Errorf("partition %d: committed %+v, want %d", p, o, end)
		}
	}
	described, err := adm.DescribeGroups(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	d := described["g1"]
	if d.State != "Stable" || len(d.Members) != 1 || d.Protocol != "cooperative-sticky" {
		t.Fatalf("describe: state %s, %d members, protocol %q, err %v", d.State, len(d.Members), d.Protocol, d.Err)
	}
}

func TestGroupChurnAtLeastOnce(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	addr := n.KafkaAddr()
	adm := kadm.NewClient(testnode.Client(t, addr))
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic, grp := "churn-"+tc.name, "churn-group-"+tc.name
			testnode.CreateTopic(t, adm, topic, 4)
			seen := testnode.NewSeenSet()
			const per = 300
			ends := testnode.Ends{}
			produce := func(tag string) { ends.Produce(t, addr, topic, per, tag) }
			m1 := testnode.StartMember(t, addr, grp, topic, tc.balancer, seen)
			m2 := testnode.StartMember(t, addr, grp, topic, tc.balancer, seen)
			produce("a")
			testnode.StartMember(t, addr, grp, topic, tc.balancer, seen)
			produce("b")
			testnode.WaitStable(t, adm, grp, 3)
			m1.Stop() // leaves
			produce("c")
			testnode.WaitStable(t, adm, grp, 2)
			m2.Crash() // session timeout
			crashed := time.Now()
			produce("d")
			testnode.StartMember(t, addr, grp, topic, tc.balancer, seen)
			produce("e")

			tags := []string{"a", "b", "c", "d", "e"}
			testnode.WaitStable(t, adm, grp, 2)
			deadline := time.Now().Add(90 * time.Second)
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				miss := seen.Missing(tags, per)
				behind := 0
				if miss == 0 {
					got := testnode.Committed(t, adm, grp)
					for p, end := range ends {
						if o, ok := got.Lookup(topic, p); !ok || o.At != end {
							behind++
						}
					}
					if behind == 0 {
						t.Logf("all consumed and committed %v after the crash", time.Since(crashed))
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d records never consumed, %d partitions' commits behind the end", miss, behind)
				}
				<-tick.C
			}
			described, err := adm.DescribeGroups(proctest.Context(t, 10*time.Second), grp)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range described[grp].Members {
				ca, _ := m.Assigned.AsConsumer()
				t.Logf("member %s: %+v", m.MemberID, ca.Topics)
			}
			if d := described[grp]; len(d.Members) != 2 {
				t.Errorf("%d members after two left, want 2: %+v", len(d.Members), d)
			}
		})
	}
}
