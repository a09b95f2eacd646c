package compat

import (
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// kafka-go speaks old versions of the group APIs (FindCoordinator v0,
// JoinGroup v1-v2, SyncGroup v0-v1, Heartbeat v0, OffsetCommit v2,
// OffsetFetch v1, LeaveGroup v0): a reader commits, closes, and the next
// one resumes after the commit.
func TestGroupKafkaGoReader(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	addr := n.KafkaAddr()
	adm := kadm.NewClient(testnode.Client(t, addr))
	testnode.CreateTopic(t, adm, "kg", 2)
	ends := testnode.ProduceN(t, addr, "kg", 100, "k")

	newReader := func() *kafka.Reader {
		return kafka.NewReader(kafka.ReaderConfig{
			Brokers: []string{addr}, GroupID: "kafkago-group", Topic: "kg",
			StartOffset: kafka.FirstOffset, MaxWait: 200 * time.Millisecond,
			SessionTimeout: 6 * time.Second, HeartbeatInterval: 500 * time.Millisecond,
			RebalanceTimeout: 10 * time.Second, JoinGroupBackoff: 200 * time.Millisecond,
		})
	}
	ctx := proctest.Context(t, 90*time.Second)
	consume := func(r *kafka.Reader, want int) map[string]bool {
		t.Helper()
		seen := map[string]bool{}
		for len(seen) < want {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				t.Fatalf("after %d messages: %v", len(seen), err)
			}
			seen[string(m.Value)] = true
			if err := r.CommitMessages(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		return seen
	}
	r1 := newReader()
	first := consume(r1, 60)
	if err := r1.Close(); err != nil {
		t.Fatal(err)
	}
	r2 := newReader()
	defer r2.Close()
	rest := consume(r2, 100-len(first))
	for v := range rest {
		if first[v] {
			t.Fatalf("%s consumed again after its commit", v)
		}
	}
	got := testnode.Committed(t, adm, "kafkago-group")
	for p, end := range ends {
		if o, _ := got.Lookup("kg", p); o.At != end {
			t.Errorf("partition %d committed at %d, want %d", p, o.At, end)
		}
	}
}
