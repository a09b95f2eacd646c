package group_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// consumeAndCommit polls cl until it consumed n records and commits them.
func consumeAndCommit(t *testing.T, cl *kgo.Client, n int) {
	t.Helper()
	testnode.PollRecords(t, cl, n)
	if err := cl.CommitUncommittedOffsets(proctest.Context(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
}

// waitGroupGone polls ListGroups until grp is not listed.
func waitGroupGone(t *testing.T, adm *kadm.Client, grp string) {
	t.Helper()
	ctx := proctest.Context(t, 30*time.Second)
	proctest.Eventually(t, 30*time.Second, "group "+grp+" gone: its offsets expired", func() bool {
		ls, err := adm.ListGroups(ctx)
		return err == nil && !slices.Contains(ls.Groups(), grp)
	})
}

// offsets.retention: on a real node with a 2 s retention checked every
// 100 ms, the offsets of a classic group whose member left and of a
// standalone commit expire and the groups are deleted (OffsetFetch
// answers nothing, ListGroups leaves them out), while a live classic
// member's and a live KIP-848 member's groups keep the offsets of the
// topic they subscribe to. After a restart with the default retention
// (7 days) the expired offsets stay expired: their tombstones are in
// __consumer_offsets. Before, offsets were never expired.
func TestOffsetsRetention(t *testing.T) {
	dir := t.TempDir()
	n := testnode.Start(t, dir, func(c *config.Broker) {
		c.OffsetsRetention = 2 * time.Second
		c.OffsetsRetentionCheckInterval = 100 * time.Millisecond
	})
	addr := n.KafkaAddr()
	adm := kadm.NewClient(testnode.Client(t, addr))
	const topic = "ret"
	testnode.CreateTopic(t, adm, topic, 1)
	testnode.ProduceN(t, addr, topic, 5, "r")
	start := kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())

	live := testnode.Client(t, addr, kgo.ConsumerGroup("ret-live"), kgo.ConsumeTopics(topic), start, kgo.DisableAutoCommit(),
		kgo.SessionTimeout(6*time.Second))
	consumeAndCommit(t, live, 5)
	live848 := testnode.Client(t, addr, kgo.ConsumerGroup("ret-live848"), kgo.ConsumeTopics(topic), start, kgo.DisableAutoCommit(),
		kgo.ServerSideBalancer())
	consumeAndCommit(t, live848, 5)
	gone := testnode.Client(t, addr, kgo.ConsumerGroup("ret-gone"), kgo.ConsumeTopics(topic), start, kgo.DisableAutoCommit(),
		kgo.SessionTimeout(6*time.Second))
	consumeAndCommit(t, gone, 5)
	gone.Close() // leaves: the group is Empty from now
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 3, LeaderEpoch: -1})
	testnode.CommitSimple(t, adm, "ret-simple", os)
	for _, grp := range []string{"ret-live", "ret-live848", "ret-gone", "ret-simple"} {
		if o, ok := testnode.Committed(t, adm, grp).Lookup(topic, 0); !ok || o.At < 3 {
			t.Fatalf("%s committed %+v before any expiry", grp, o)
		}
	}

	waitGroupGone(t, adm, "ret-gone")
	waitGroupGone(t, adm, "ret-simple")
	for _, grp := range []string{"ret-gone", "ret-simple"} {
		if o, ok := testnode.Committed(t, adm, grp).Lookup(topic, 0); ok {
			t.Fatalf("%s still has offset %+v after it expired", grp, o)
		}
	}
	// A standalone commit made now expires a whole retention later: the
	// live groups' commits, older, have then been past retention for as
	// long, through many checks.
	testnode.CommitSimple(t, adm, "ret-marker", os)
	waitGroupGone(t, adm, "ret-marker")
	for _, grp := range []string{"ret-live", "ret-live848"} {
		if o, ok := testnode.Committed(t, adm, grp).Lookup(topic, 0); !ok || o.At != 5 {
			t.Fatalf("%s with a live member subscribed to %s: offset %+v, want 5 kept", grp, topic, o)
		}
	}

	cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Close(cctx); err != nil {
		t.Fatal(err)
	}
	n2 := testnode.Start(t, dir) // the default retention: nothing expires now
	adm2 := kadm.NewClient(testnode.Client(t, n2.KafkaAddr()))
	got := testnode.ListGroupsLoaded(t, testnode.OnlyBroker(t, testnode.Client(t, n2.KafkaAddr())))
	if want := []string{"ret-live", "ret-live848"}; !slices.Equal(got, want) {
		t.Fatalf("groups after the restart: %v, want %v", got, want)
	}
	for _, grp := range []string{"ret-gone", "ret-simple", "ret-marker"} {
		if o, ok := testnode.Committed(t, adm2, grp).Lookup(topic, 0); ok {
			t.Fatalf("%s has offset %+v again after the restart", grp, o)
		}
	}
	if o, ok := testnode.Committed(t, adm2, "ret-live").Lookup(topic, 0); !ok || o.At != 5 {
		t.Fatalf("ret-live after the restart: %+v, want 5", o)
	}
}
