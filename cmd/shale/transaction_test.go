package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestTransactionVerbs: a transaction left open by its producer shows in
// `shale transaction list|describe` and in `shale producer describe`, and
// `shale transaction abort` at its start offset closes it in the
// partition (the producer's open transaction is gone).
func TestTransactionVerbs(t *testing.T) {
	addr := startCLINode(t)
	with := func(args ...string) []string { return append(args, "--bootstrap", addr) }
	cliOK(t, with("topic", "create", "orders", "-p", "1")...)

	ctx := proctest.Context(t, 60*time.Second)
	cl := testnode.Client(t, addr, kgo.TransactionalID("hanging-app"), kgo.DefaultProduceTopic("orders"))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("a")}, &kgo.Record{Value: []byte("b")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var listed []struct {
		ID    string `json:"transactional_id"`
		State string `json:"state"`
	}
	if err := json.Unmarshal([]byte(cliOK(t, with("transaction", "list", "--state", "Ongoing", "--output", "json")...)), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].ID != "hanging-app" || listed[0].State != "Ongoing" {
		t.Fatalf("transaction list: %+v", listed)
	}
	var described []transactionDescription
	if err := json.Unmarshal([]byte(cliOK(t, with("transaction", "describe", "hanging-app", "--output", "json")...)), &described); err != nil {
		t.Fatal(err)
	}
	if len(described) != 1 || described[0].State != "Ongoing" || len(described[0].Partitions) != 1 || described[0].Partitions[0] != "orders-0" {
		t.Fatalf("transaction describe: %+v", described)
	}
	type producer struct {
		ProducerID int64 `json:"producer_id"`
		Start      int64 `json:"current_transaction_start_offset"`
	}
	var before []producer
	if err := json.Unmarshal([]byte(cliOK(t, with("producer", "describe", "orders", "--output", "json")...)), &before); err != nil {
		t.Fatal(err)
	}
	if len(before) != 1 || before[0].Start != 0 || before[0].ProducerID != described[0].ProducerID {
		t.Fatalf("producer describe with the transaction open: %+v", before)
	}
	if _, _, code := cliRun(t, with("transaction", "abort", "--topic", "orders", "--partition", "0", "--start-offset", "1")...); code == 0 {
		t.Fatal("abort at an offset where no transaction starts succeeded")
	}
	cliOK(t, with("transaction", "abort", "--topic", "orders", "--partition", "0", "--start-offset", "0")...)
	var after []producer
	if err := json.Unmarshal([]byte(cliOK(t, with("producer", "describe", "orders", "--output", "json")...)), &after); err != nil {
		t.Fatal(err)
	}
	if len(after) != 1 || after[0].Start != -1 {
		t.Fatalf("producer describe after the abort: %+v", after)
	}
}
