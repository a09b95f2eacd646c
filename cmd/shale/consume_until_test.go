package main

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/testnode"
)

// cliRunCtx is cliRun under ctx: the command's context ends with ctx, as on
// an interrupt. A command that returns only because ctx ended has hung.
func cliRunCtx(ctx context.Context, args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(eofReader{})
	root.SetOut(&out)
	root.SetErr(&errb)
	cmd, err := root.ExecuteContextC(ctx)
	return out.String(), errb.String(), exitCode(cmd, &errb, err)
}

// TestConsumeUntilEndOfTransactionalTopic: `shale consume T --until end`
// returns once every partition's fetch position reaches the end it
// resolved at the start, on partitions whose end is past the last data
// record: one ending in a COMMIT marker, one ending in an ABORT marker
// (its records aborted), and one that is empty. The end is a
// transaction marker's offset + 1, so judging the end by the last
// printed record's offset never gets there (issue 22 item 8: the command
// ran for more than 10 minutes).
func TestConsumeUntilEndOfTransactionalTopic(t *testing.T) {
	t.Run("one node", func(t *testing.T) { consumeUntilEndOfTransactions(t, startCLINode(t), "1") })
	t.Run("three nodes", func(t *testing.T) {
		nodes, _ := testnode.StartCluster(t, t.TempDir(), 3)
		waitBrokers(t, nodes[0].KafkaAddr(), 3) // a topic of 3 replicas needs all three
		consumeUntilEndOfTransactions(t, nodes[0].KafkaAddr(), "3")
	})
}

// consumeUntilEndOfTransactions runs the test against the cluster at addr,
// with a topic of the given replication factor.
func consumeUntilEndOfTransactions(t *testing.T, addr, replicas string) {
	with := func(args ...string) []string { return append(args, "--bootstrap", addr) }
	cliOK(t, with("topic", "create", "txns", "-p", "3", "-r", replicas)...)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := testnode.Client(t, addr, kgo.TransactionalID("until-end"), kgo.DefaultProduceTopic("txns"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	inTxn := func(partition int32, n int, end kgo.TransactionEndTry) {
		t.Helper()
		testnode.ProduceInTxn(t, ctx, cl, partition, n, end)
	}
	inTxn(0, 100, kgo.TryCommit) // offsets 0..99, the COMMIT marker at 100
	inTxn(1, 5, kgo.TryCommit)   // 0..4, COMMIT at 5
	inTxn(1, 3, kgo.TryAbort)    // 6..8 aborted, ABORT at 9
	// Partition 2 stays empty.

	// The coordinator writes the markers after EndTxn answers: wait for them.
	adm := kadm.NewClient(cl)
	want := map[int32]int64{0: 101, 1: 10, 2: 0}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		ends, err := adm.ListEndOffsets(ctx, "txns")
		if err != nil {
			t.Fatal(err)
		}
		got := map[int32]int64{}
		ends.Each(func(o kadm.ListedOffset) { got[o.Partition] = o.Offset })
		if maps.Equal(got, want) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("partition ends %v, want %v", got, want)
		}
	}

	runCtx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	out, errOut, code := cliRunCtx(runCtx, with("consume", "txns", "--until", "end", "-f", `%p:%o `)...)
	if runCtx.Err() != nil {
		t.Fatalf("consume --until end did not return (it printed %d records); stderr:\n%s", len(strings.Fields(out)), errOut)
	}
	if code != 0 {
		t.Fatalf("consume --until end: exit %d, stderr:\n%s", code, errOut)
	}
	// read_uncommitted, as kafka-console-consumer: the aborted records print;
	// the markers do not.
	if n := len(strings.Fields(out)); n != 108 {
		t.Fatalf("printed %d records, want 108: %s", n, out)
	}
	if strings.Contains(out, "0:100 ") || strings.Contains(out, "1:5 ") || strings.Contains(out, "1:9 ") {
		t.Fatalf("a transaction marker was printed: %s", out)
	}
}

// waitBrokers polls the metadata at addr until it lists n brokers.
func waitBrokers(t *testing.T, addr string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
		if err == nil && len(m.Brokers) == n {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the metadata lists %d brokers, want %d (%v)", len(m.Brokers), n, err)
		}
	}
}
