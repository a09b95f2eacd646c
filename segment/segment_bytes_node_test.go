package segment_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/segment/batch"
)

// TestBatchLargerThanSegmentBytes: a record batch must fit in one segment.
// A batch within max.message.bytes but larger than the topic's
// segment.bytes is refused as Kafka refuses it (UnifiedLog.append's
// RecordBatchTooLargeException): RECORD_LIST_TOO_LARGE, not
// MESSAGE_TOO_LARGE, with an error message (Produce v8+) that names the
// partition, the batch's size and segment.bytes (issue 22 item 11: a
// franz-go producer got a bare MESSAGE_TOO_LARGE for 19,517 of 20,000
// records). Batches that fit are written.
func TestBatchLargerThanSegmentBytes(t *testing.T) {
	const segmentBytes = 65536
	n := testnode.Start(t, t.TempDir())
	cl := testnode.Client(t, n.KafkaAddr())
	ctx := proctest.Context(t, 60*time.Second)
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": new(fmt.Sprint(segmentBytes))}, "small-segments")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}

	// A raw Produce: one batch of about 100 KiB, below max.message.bytes.
	big, err := batch.Build(nil, batch.NoProducer(), []batch.Record{{Value: bytes.Repeat([]byte("x"), 100<<10)}})
	if err != nil {
		t.Fatal(err)
	}
	small, err := batch.Build(nil, batch.NoProducer(), []batch.Record{{Value: []byte("fits")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, recs := range [][]byte{big, small} {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = "small-segments", testnode.TopicID(t, cl, "small-segments")
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = 0, recs
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		presp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		p := presp.Topics[0].Partitions[0]
		msg := ""
		if p.ErrorMessage != nil {
			msg = *p.ErrorMessage
		}
		if len(recs) == len(small) {
			if p.ErrorCode != 0 {
				t.Fatalf("a batch that fits: %v %s", kerr.ErrorForCode(p.ErrorCode), msg)
			}
			continue
		}
		if p.ErrorCode != kerr.RecordListTooLarge.Code {
			t.Fatalf("a batch of %d bytes with segment.bytes %d: %v (%s), want RECORD_LIST_TOO_LARGE", len(big), segmentBytes, kerr.ErrorForCode(p.ErrorCode), msg)
		}
		for _, w := range []string{"small-segments-0", fmt.Sprint(len(big)), fmt.Sprintf("segment.bytes %d", segmentBytes)} {
			if !strings.Contains(msg, w) {
				t.Fatalf("error message %q does not say %q", msg, w)
			}
		}
	}

	// franz-go with batches of up to 1 MiB, flushed by hand so that the
	// 20,000 records (about 300 KiB) go in batches as large as the client
	// makes them: every record it cannot write fails with
	// RECORD_LIST_TOO_LARGE.
	pr := testnode.Client(t, n.KafkaAddr(), kgo.DefaultProduceTopic("small-segments"), kgo.ProducerBatchMaxBytes(1<<20),
		kgo.ManualFlushing(), kgo.MaxBufferedRecords(30_000))
	var mu sync.Mutex
	var errs []error
	for i := range 20_000 {
		pr.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "record %05d", i)}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	if err := pr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) == 0 {
		t.Fatal("20,000 records in batches of up to 1 MiB were all written to a topic of 64 KiB segments")
	}
	for _, err := range errs {
		if !errors.Is(err, kerr.RecordListTooLarge) {
			t.Fatalf("%d of 20,000 records failed, one with %v: want RECORD_LIST_TOO_LARGE", len(errs), err)
		}
	}
	t.Logf("%d of 20,000 records refused with RECORD_LIST_TOO_LARGE", len(errs))
}
