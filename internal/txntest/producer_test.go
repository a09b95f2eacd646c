package txntest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestTransactionalProducerCommitAbort: a franz-go transactional producer
// on one node commits one transaction and aborts the next; both reach
// their Complete state, every partition it wrote gets one marker per
// transaction, and its producer state shows no open transaction.
func TestTransactionalProducerCommitAbort(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	ctx := proctest.Context(t, 90*time.Second)
	admin := testnode.Client(t, n.KafkaAddr())
	createTopic(t, ctx, admin, "events", 2, 1)

	const id = "producer-commit-abort"
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.TransactionalID(id), kgo.DefaultProduceTopic("events"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	run := func(commit bool, tag string) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			r := &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", tag, i), Partition: int32(i % 2)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %s-%d: %v", tag, i, err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("EndTransaction(%v): %v", commit, err)
		}
	}
	run(true, "committed")
	run(false, "aborted")

	waitState(t, ctx, admin, id, "CompleteAbort")
	// The coordinator's metrics count one commit and one abort, and
	// nothing open.
	resp, err := http.Get("http://" + n.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"shale_transactions_committed_total 1", "shale_transactions_aborted_total 1", "shale_transactions_open 0"} {
		if !strings.Contains(string(body), "\n"+line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	for _, c := range []struct {
		level kgo.IsolationLevel
		name  string
		want  int
	}{{kgo.ReadCommitted(), "read_committed", 6}, {kgo.ReadUncommitted(), "read_uncommitted", 12}} {
		got := consumeAll(t, ctx, n.KafkaAddr(), "events", c.level, c.want)
		committed := 0
		for _, v := range got {
			if strings.HasPrefix(v, "committed-") {
				committed++
			} else if c.want == 6 {
				t.Errorf("%s consumer read %q of the aborted transaction", c.name, v)
			}
		}
		if len(got) != c.want || committed != 6 {
			t.Errorf("%s consumer read %d records (%d committed), want %d (6)", c.name, len(got), committed, c.want)
		}
	}
	st := describeTxn(t, ctx, admin, id)
	pid := st.ProducerID
	for _, p := range []int32{0, 1} {
		// 3 records and a marker per transaction.
		if end := endOffset(t, ctx, admin, "events", p); end != 8 {
			t.Errorf("events-%d: log end %d, want 8", p, end)
		}
		if ap := describeProducer(t, ctx, admin, "events", p, pid); ap == nil || ap.CurrentTxnStartOffset != -1 {
			t.Errorf("events-%d: producer %+v, want no open transaction", p, ap)
		}
	}
}

// consumeAll reads topic from the start with the isolation level until
// it has want records and then for another half second, and returns
// their values.
func consumeAll(t *testing.T, ctx context.Context, addr, topic string, level kgo.IsolationLevel, want int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	deadline := time.Now().Add(20 * time.Second)
	quiet := time.Time{}
	for time.Now().Before(deadline) && (quiet.IsZero() || time.Now().Before(quiet)) {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		if len(got) >= want && quiet.IsZero() {
			quiet = time.Now().Add(500 * time.Millisecond) // anything more would be too many
		}
	}
	return got
}
