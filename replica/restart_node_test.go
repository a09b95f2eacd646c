package replica_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

func TestRestartKeepsAcknowledgedRecords(t *testing.T) {
	dir := t.TempDir()
	n := testnode.Start(t, dir)
	topic := "durable"
	prod := testnode.Client(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	sent := testnode.Records(topic, 300, "before")
	if err := prod.ProduceSync(proctest.Context(t, 30*time.Second), sent...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	prod.Close()
	if err := n.Close(proctest.Context(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	n2 := testnode.Start(t, dir)
	testnode.CheckSame(t, sent, testnode.ConsumeAll(t, n2.KafkaAddr(), topic, len(sent)))
	// The idempotent producer state came back too: a new producer appends after the old records.
	prod2 := testnode.Client(t, n2.KafkaAddr())
	more := testnode.Records(topic, 10, "after")
	if err := prod2.ProduceSync(proctest.Context(t, 30*time.Second), more...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, r := range more {
		if r.Offset < 300 {
			t.Fatalf("record written over existing offsets: %d", r.Offset)
		}
	}
}
