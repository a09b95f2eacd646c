package compat

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// txnRounds transactions of txnRecords records each; every third one is
// aborted, the last one is committed.
const (
	txnRounds  = 10
	txnRecords = 30
)

func txnAborted(round int) bool { return round%3 == 2 }

func txnValue(round, i int) string { return fmt.Sprintf("txn-%02d-%03d", round, i) }

// TestConfluentTransactions is issue 17's librdkafka check: a
// confluent-kafka-go transactional producer commits and aborts
// transactions, and read_committed consumers of both librdkafka and
// franz-go see exactly the committed records, in order, while
// read_uncommitted ones see every record.
func TestConfluentTransactions(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	const topic = "confluent-txn"
	createTopic(t, n.KafkaAddr(), topic, numPartitions)

	p, err := kafka.NewProducer(with(confluentConfig(n.KafkaAddr()),
		"transactional.id", "compat-confluent-txn", "acks", "all", "linger.ms", 5,
		"transaction.timeout.ms", 60000, "message.timeout.ms", 30000))
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	defer p.Close()
	ctx := proctest.Context(t, 2*time.Minute)
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatalf("InitTransactions: %v", err)
	}
	var committed, all []string
	for round := range txnRounds {
		if err := p.BeginTransaction(); err != nil {
			t.Fatalf("round %d: BeginTransaction: %v", round, err)
		}
		reports := make(chan kafka.Event, txnRecords)
		for i := range txnRecords {
			v := txnValue(round, i)
			m := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: ptr(topic), Partition: int32(i % numPartitions)}, Value: []byte(v)}
			if err := p.Produce(m, reports); err != nil {
				t.Fatalf("round %d: Produce %d: %v", round, i, err)
			}
			all = append(all, v)
		}
		for range txnRecords {
			select {
			case ev := <-reports:
				if m, ok := ev.(*kafka.Message); !ok || m.TopicPartition.Error != nil {
					t.Fatalf("round %d: delivery report %v", round, ev)
				}
			case <-ctx.Done():
				t.Fatalf("round %d: delivery reports: deadline", round)
			}
		}
		if txnAborted(round) {
			if err := p.AbortTransaction(ctx); err != nil {
				t.Fatalf("round %d: AbortTransaction: %v", round, err)
			}
			continue
		}
		if err := p.CommitTransaction(ctx); err != nil {
			t.Fatalf("round %d: CommitTransaction: %v", round, err)
		}
		for i := range txnRecords {
			committed = append(committed, txnValue(round, i))
		}
	}

	for _, c := range []struct {
		name  string
		read  func(t *testing.T, addr string, committedOnly bool, want int) []string
		level bool
		want  []string
	}{
		{"librdkafka read_committed", confluentReadAll, true, committed},
		{"librdkafka read_uncommitted", confluentReadAll, false, all},
		{"franz-go read_committed", franzReadAll, true, committed},
		{"franz-go read_uncommitted", franzReadAll, false, all},
	} {
		got := c.read(t, n.KafkaAddr(), c.level, len(c.want))
		// Per partition the order is the produce order.
		byPart := func(vs []string) [numPartitions][]string {
			var out [numPartitions][]string
			for _, v := range vs {
				var round, i int
				fmt.Sscanf(v, "txn-%d-%d", &round, &i)
				out[i%numPartitions] = append(out[i%numPartitions], v)
			}
			return out
		}
		g, w := byPart(got), byPart(c.want)
		for part := range numPartitions {
			if !slices.Equal(g[part], w[part]) {
				t.Errorf("%s: partition %d: got %d records %v\nwant %d %v", c.name, part, len(g[part]), g[part], len(w[part]), w[part])
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

// confluentReadAll reads want records of every partition of confluent-txn
// from the beginning with librdkafka, at the isolation level asked, then
// polls a little more for any record beyond them.
func confluentReadAll(t *testing.T, addr string, committedOnly bool, want int) []string {
	t.Helper()
	level := "read_uncommitted"
	if committedOnly {
		level = "read_committed"
	}
	c, err := kafka.NewConsumer(with(confluentConfig(addr),
		"group.id", "shale-compat-unused", "enable.auto.commit", false, "enable.auto.offset.store", false,
		"fetch.wait.max.ms", 200, "isolation.level", level))
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	defer c.Close()
	topic := "confluent-txn"
	var tps []kafka.TopicPartition
	for p := range numPartitions {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: int32(p), Offset: kafka.OffsetBeginning})
	}
	if err := c.Assign(tps); err != nil {
		t.Fatalf("Assign: %v", err)
	}
	var got []string
	deadline := time.Now().Add(40 * time.Second)
	var extra time.Time
	for {
		if len(got) >= want && extra.IsZero() {
			extra = time.Now().Add(time.Second)
		}
		if !extra.IsZero() && time.Now().After(extra) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("librdkafka %s: read %d of %d records before the deadline", level, len(got), want)
		}
		switch ev := c.Poll(100).(type) {
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				t.Fatalf("consume: %v", ev.TopicPartition.Error)
			}
			got = append(got, string(ev.Value))
		case kafka.Error:
			if ev.IsFatal() {
				t.Fatalf("consumer: fatal %v", ev)
			}
		}
	}
}

// franzReadAll is confluentReadAll with franz-go.
func franzReadAll(t *testing.T, addr string, committedOnly bool, want int) []string {
	t.Helper()
	level := kgo.ReadUncommitted()
	if committedOnly {
		level = kgo.ReadCommitted()
	}
	offs := map[int32]kgo.Offset{}
	for p := range numPartitions {
		offs[int32(p)] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.FetchIsolationLevel(level),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"confluent-txn": offs}), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := proctest.Context(t, 40*time.Second)
	var got []string
	var extra time.Time
	for {
		if len(got) >= want && extra.IsZero() {
			extra = time.Now().Add(time.Second)
		}
		if !extra.IsZero() && time.Now().After(extra) {
			return got
		}
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("franz-go: read %d of %d records before the deadline", len(got), want)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
}
