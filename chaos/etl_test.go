package chaos

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/natsembed"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/txn"
)

// TestETLAbortsWhenAnOutputFails is issue 17's LOST of the transactions
// schedule, seed 203, on one `shale serve` process: while the transaction
// coordinator's __transaction_state partition cannot take writes (its ISR
// is below min.insync.replicas, as when the chaos run killed the other
// replica of its RF 2 partition), the pipeline's output records fail at
// their delivery timeout before any of their partitions joined the
// transaction; the coordinator then heals before the pipeline's End gives
// up. The transaction holds only the group's offsets, and committing it
// moves the group past inputs whose outputs were never written. The
// workload must abort such a transaction (franz-go leaves that to its
// caller) and copy the inputs again: checkETL then finds each input's
// output once.
func TestETLAbortsWhenAnOutputFails(t *testing.T) {
	one := startOneNode(t, "etl node", topicSpec{name: "chaos", parts: 1})
	seeds, ctx, cl, adm, in := one.seeds, one.ctx, one.cl, one.adm, one.in
	const first, total = 5, 20
	produce := func(from, to int) {
		t.Helper()
		var rs []*kgo.Record
		for i := from; i < to; i++ {
			rs = append(rs, &kgo.Record{Topic: in.name, Partition: 0, Value: fmt.Appendf(nil, "v%d", i)})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("producing inputs [%d,%d): %v", from, to, err)
		}
	}
	committed := func() int64 {
		c, err := committedOffsets(ctx, adm, in)
		if err != nil {
			return -1
		}
		return c[0]
	}

	// A short delivery timeout, so that the records fail while the
	// coordinator is out, and End's retries outlive the fault.
	rec := newRecorder(testWriter{t})
	e, err := newETL("etl", seeds, in, rec, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ectx, stopETL := context.WithCancel(ctx)
	defer func() { stopETL(); <-e.done }()
	go e.run(ectx)

	// A first transaction while everything is up: the coordinator has
	// created and loaded __transaction_state, the group has committed.
	produce(0, first)
	if err := proctest.WaitFor(60*time.Second, func() bool { return committed() == first }); err != nil {
		t.Fatalf("the first inputs were not committed (committed %d): %v", committed(), err)
	}

	// The fault: the coordinator's partition of chaos-etl needs two
	// in-sync replicas and has one. A probe id of the same partition tells
	// when the coordinator's writes fail.
	setMinISR := func(v string) {
		t.Helper()
		rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.replicas", Value: kadm.StringPtr(v)}}, txn.StateTopic)
		if err == nil {
			for _, r := range rs {
				if r.Err != nil {
					err = r.Err
				}
			}
		}
		if err != nil {
			t.Fatalf("setting min.insync.replicas %s on %s: %v", v, txn.StateTopic, err)
		}
	}
	setMinISR("2")
	probe := ""
	for i := 0; probe == ""; i++ {
		if id := fmt.Sprintf("probe-%d", i); txn.PartitionFor(id, 50) == txn.PartitionFor(etlTxnID, 50) {
			probe = id
		}
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	if err := proctest.WaitFor(30*time.Second, func() bool {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = kmsg.StringPtr(probe), 10000, -1, -1
		resp, err := req.RequestWith(ctx, pcl)
		return err != nil || resp.ErrorCode != 0
	}); err != nil {
		t.Fatalf("the coordinator still takes writes with min.insync.replicas 2 on one replica: %v", err)
	}

	// The next inputs: their outputs fail at the delivery timeout. Then
	// the coordinator heals, in time for the transaction's End.
	produce(first, total)
	if err := proctest.WaitFor(60*time.Second, func() bool { return e.produceFailed.Load() > 0 }); err != nil {
		t.Fatalf("no output failed while the coordinator could not take writes: %v", err)
	}
	setMinISR("1")

	h := &History{Compacted: []string{}}
	h.ETL = drainETL(ctx, e, adm, map[int32]int64{0: total}, stopETL)
	h.ETL.Outputs = readCommitted(ctx, seeds, adm, e.out)
	h.Final = readCommitted(ctx, seeds, adm, in)
	t.Logf("etl: %d committed, %d aborted, %d with a failed output, committed offsets %v",
		h.ETL.Commits, h.ETL.Aborts, h.ETL.ProduceFailed, h.ETL.Committed)
	r := Result{Counts: map[Kind]int{}}
	finals := map[TP]*finalIndex{}
	for i := range h.Final {
		finals[h.Final[i].TP] = indexFinal(&h.Final[i])
	}
	if n := len(h.Final); n != 1 || len(h.Final[0].Records) != total {
		t.Fatalf("the input read back: %+v, want %d records", h.Final, total)
	}
	checkETL(&r, h, finals)
	for _, v := range r.Violations {
		t.Error(v)
	}
}

// oneNode is one `shale serve` process on an in-process NATS server, for
// the workload tests that need no cluster: a client of it, and the input
// topic in and etlOutput created with in.parts partitions each.
type oneNode struct {
	seeds []string
	ctx   context.Context // ends after 4 minutes or with the test
	cl    *kgo.Client     // manual partitioner; closed when the test ends
	adm   *kadm.Client
	in    topicSpec
}

func startOneNode(t *testing.T, name string, in topicSpec) oneNode {
	t.Helper()
	bin := proctest.Binary(t)
	dir := t.TempDir()
	srv, err := natsembed.Start(natsembed.Config{StoreDir: filepath.Join(dir, "nats"), Port: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown) // after the node's cleanup, registered later
	node := proctest.Serve(t, bin, filepath.Join(dir, "node-1"), []string{"--node-id", "1", "--nats", srv.ClientURL()},
		proctest.Name(name))
	node.Start()
	node.WaitReady()
	one := oneNode{seeds: []string{node.Kafka()}, ctx: proctest.Context(t, 4*time.Minute), in: in}
	one.cl, err = kgo.NewClient(kgo.SeedBrokers(one.seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(one.cl.Close)
	one.adm = kadm.NewClient(one.cl)
	for _, topic := range []string{in.name, etlOutput} {
		resp, err := one.adm.CreateTopic(one.ctx, in.parts, 1, map[string]*string{"min.insync.replicas": kadm.StringPtr("1")}, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("creating %s: %v", topic, err)
		}
	}
	return one
}
