package group_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// wroteVersions is a kgo logger that records the requests the client
// wrote ("OffsetCommit v10"), from kgo's debug line for each.
type wroteVersions struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (w *wroteVersions) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (w *wroteVersions) Log(_ kgo.LogLevel, msg string, _ ...any) {
	if req, ok := strings.CutPrefix(msg, "wrote "); ok {
		w.mu.Lock()
		w.seen[req] = true
		w.mu.Unlock()
	}
}

func (w *wroteVersions) wrote(req string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[req]
}

// TestOffsetsByTopicIDWithKgo: once the node serves OffsetCommit and
// OffsetFetch v10, franz-go sends them by topic id on its own: a consumer
// group member's commit and kadm's CommitOffsets and FetchOffsets go as
// v10 and round-trip. A client capped at v9 (by name) reads the same
// offsets, and a v9 commit is read at v10: offsets are kept by name.
func TestOffsetsByTopicIDWithKgo(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	addr := n.KafkaAddr()
	log := &wroteVersions{seen: map[string]bool{}}
	adm := kadm.NewClient(testnode.Client(t, addr, kgo.WithLogger(log)))
	testnode.CreateTopic(t, adm, "byid-a", 2)
	testnode.CreateTopic(t, adm, "byid-b", 1)
	ends := testnode.ProduceN(t, addr, "byid-a", 10, "x")

	// A member's commit of what it consumed.
	cl := testnode.Client(t, addr, kgo.WithLogger(log), kgo.ConsumerGroup("byid-member"), kgo.ConsumeTopics("byid-a"),
		kgo.SessionTimeout(6*time.Second), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	got := 0
	for deadline := time.Now().Add(30 * time.Second); got < 10 && time.Now().Before(deadline); {
		got += cl.PollFetches(proctest.Context(t, 2*time.Second)).NumRecords()
	}
	if got < 10 {
		t.Fatalf("consumed %d of 10 records", got)
	}
	if err := cl.CommitUncommittedOffsets(proctest.Context(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	member := testnode.Committed(t, adm, "byid-member")
	for p, end := range ends {
		if o, ok := member.Lookup("byid-a", p); !ok || o.At != end || o.Err != nil {
			t.Fatalf("member's commit of byid-a-%d: %+v, want %d", p, o, end)
		}
	}

	// kadm's simple commit and fetch.
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "byid-a", Partition: 1, At: 4, LeaderEpoch: -1, Metadata: "m1"})
	os.Add(kadm.Offset{Topic: "byid-b", Partition: 0, At: 5, LeaderEpoch: -1})
	testnode.CommitSimple(t, adm, "byid-simple", os)
	simple := testnode.Committed(t, adm, "byid-simple")
	if o, _ := simple.Lookup("byid-a", 1); o.At != 4 || o.Metadata != "m1" {
		t.Fatalf("kadm fetch of byid-a-1: %+v", o)
	}
	if o, _ := simple.Lookup("byid-b", 0); o.At != 5 {
		t.Fatalf("kadm fetch of byid-b-0: %+v", o)
	}
	for _, req := range []string{"OffsetCommit v10", "OffsetFetch v10"} {
		if !log.wrote(req) {
			t.Errorf("kgo never wrote %s", req)
		}
	}

	// By name at v9: the same offsets; a v9 commit is read at v10.
	v9 := kversion.V4_4_0()
	v9.SetMaxKeyVersion(int16(kmsg.OffsetCommit), 9)
	v9.SetMaxKeyVersion(int16(kmsg.OffsetFetch), 9)
	log9 := &wroteVersions{seen: map[string]bool{}}
	adm9 := kadm.NewClient(testnode.Client(t, addr, kgo.MaxVersions(v9), kgo.WithLogger(log9)))
	if o, _ := testnode.Committed(t, adm9, "byid-simple").Lookup("byid-a", 1); o.At != 4 || o.Metadata != "m1" {
		t.Fatalf("v9 fetch of byid-a-1: %+v", o)
	}
	os9 := kadm.Offsets{}
	os9.Add(kadm.Offset{Topic: "byid-b", Partition: 0, At: 8, LeaderEpoch: -1})
	testnode.CommitSimple(t, adm9, "byid-simple", os9)
	if o, _ := testnode.Committed(t, adm, "byid-simple").Lookup("byid-b", 0); o.At != 8 {
		t.Fatalf("v10 fetch of the v9 commit: %+v", o)
	}
	for _, req := range []string{"OffsetCommit v9", "OffsetFetch v9"} {
		if !log9.wrote(req) {
			t.Errorf("the capped client never wrote %s", req)
		}
	}
}
