package fetch_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

func TestLongPollWokenByAppend(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	topic := "poll"
	cons := testnode.Client(t, n.KafkaAddr(), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(time.Minute),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AllowAutoTopicCreation())
	prod := testnode.Client(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err := prod.ProduceSync(proctest.Context(t, 20*time.Second), &kgo.Record{Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ctx := proctest.Context(t, 30*time.Second)
	if fs := cons.PollFetches(ctx); fs.NumRecords() != 1 {
		t.Fatalf("first poll: %d records, errs %v", fs.NumRecords(), fs.Errors())
	}
	done := make(chan int, 1)
	go func() { done <- cons.PollFetches(ctx).NumRecords() }()
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("second")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if got != 1 {
			t.Fatalf("second poll got %d records", got)
		}
	case <-ctx.Done():
		t.Fatal("a one-minute long poll was not woken by the append")
	}
}
