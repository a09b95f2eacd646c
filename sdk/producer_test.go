package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/sdk"
)

// TestProduceConsumeRoundTrip sends keyed records with every codec, async
// and sync, and reads them back in order, each in the partition the Java
// client would pick for its key.
func TestProduceConsumeRoundTrip(t *testing.T) {
	a := newAdmin(t)
	ctx := ctxT(t, 60*time.Second)
	for _, codec := range []sdk.Compression{sdk.CompressionNone, sdk.CompressionGzip, sdk.CompressionSnappy, sdk.CompressionLZ4, sdk.CompressionZstd} {
		topic := "roundtrip-" + string(codec)
		createTopic(t, a, topic, 5, nil)
		p := newProducer(t, sdk.WithCompression(codec), sdk.WithLinger(10*time.Millisecond))
		const n = 200
		var (
			mu    sync.Mutex
			acked int
			errs  []error
		)
		for i := range n / 2 {
			r := &sdk.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i%17), Value: fmt.Appendf(nil, "v%d", i),
				Headers: []sdk.Header{{Key: "i", Value: fmt.Appendf(nil, "%d", i)}}}
			p.Send(ctx, r, func(r *sdk.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				acked++
				if err != nil {
					errs = append(errs, err)
				}
			})
		}
		var sync []*sdk.Record
		for i := n / 2; i < n; i++ {
			sync = append(sync, &sdk.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i%17), Value: fmt.Appendf(nil, "v%d", i),
				Headers: []sdk.Header{{Key: "i", Value: fmt.Appendf(nil, "%d", i)}}})
		}
		if err := p.SendSync(ctx, sync...); err != nil {
			t.Fatal(err)
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if acked != n/2 || len(errs) > 0 {
			t.Fatalf("%s: %d callbacks, errors %v", codec, acked, errs)
		}
		mu.Unlock()
		for _, r := range sync {
			if want := sdk.KeyPartition(r.Key, 5); int(r.Partition) != want {
				t.Fatalf("key %s in partition %d, Java would pick %d", r.Key, r.Partition, want)
			}
		}

		c := newConsumer(t, sdk.WithTopics(topic))
		got := pollN(ctx, t, c, n)
		last := map[int32]int{}
		for _, r := range got {
			if want := sdk.KeyPartition(r.Key, 5); int(r.Partition) != want {
				t.Fatalf("%s: key %s read from partition %d, want %d", codec, r.Key, r.Partition, want)
			}
			var i int
			fmt.Sscanf(string(r.Value), "v%d", &i)
			if string(r.Headers[0].Value) != fmt.Sprint(i) || string(r.Key) != fmt.Sprintf("k%d", i%17) {
				t.Fatalf("%s: record %q/%q headers %v", codec, r.Key, r.Value, r.Headers)
			}
			if prev, ok := last[r.Partition]; ok && i <= prev {
				t.Fatalf("%s: partition %d out of order: v%d after v%d", codec, r.Partition, i, prev)
			}
			last[r.Partition] = i
		}
		if len(got) != n {
			t.Fatalf("%s: read %d records, want %d", codec, len(got), n)
		}
	}
}

// TestBackpressure fills a producer's buffer with records for a topic
// that does not exist yet (so they cannot leave), by record count and by
// bytes: TrySend then fails with ErrBufferFull at once, a blocking Send
// waits and gives up with its context, and once the topic is created the
// buffer drains and a Send that was waiting for room goes through.
func TestBackpressure(t *testing.T) {
	a := newAdmin(t)
	for _, c := range []struct {
		name string
		opt  sdk.Option
	}{
		{"records", sdk.WithMaxBufferedRecords(10)},
		{"bytes", sdk.WithBufferMemory(10_000)},
	} {
		t.Run(c.name, func(t *testing.T) {
			topic := "backpressure-" + c.name
			ctx := ctxT(t, 60*time.Second)
			p := newProducer(t, c.opt, sdk.WithKgoOptions(kgo.UnknownTopicRetries(-1)))
			var (
				wg     sync.WaitGroup
				mu     sync.Mutex
				failed []error
			)
			cb := func(_ *sdk.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					failed = append(failed, err)
					mu.Unlock()
				}
			}
			// Fill: TrySend until the buffer refuses (bounded).
			buffered := 0
			for ; buffered < 100; buffered++ {
				res := make(chan error, 1)
				wg.Add(1)
				p.TrySend(ctx, &sdk.Record{Topic: topic, Value: make([]byte, 900)}, func(r *sdk.Record, err error) {
					if errors.Is(err, sdk.ErrBufferFull) {
						res <- err
						wg.Done()
						return
					}
					cb(r, err)
				})
				if p.BufferedRecords() == int64(buffered) { // refused: not counted
					if err := <-res; !errors.Is(err, sdk.ErrBufferFull) {
						t.Fatalf("refused TrySend: %v", err)
					}
					break
				}
			}
			if buffered == 0 || buffered > 11 {
				t.Fatalf("buffer took %d records before refusing, want 1..11", buffered)
			}
			if c.name == "records" && buffered != 10 {
				t.Fatalf("buffer took %d records, want WithMaxBufferedRecords(10)", buffered)
			}
			// A blocking Send on the full buffer ends only with its context.
			short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			blocked := make(chan error, 1)
			p.Send(short, &sdk.Record{Topic: topic, Value: make([]byte, 900)}, func(_ *sdk.Record, err error) { blocked <- err })
			if err := <-blocked; !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Send on a full buffer: %v, want the context's deadline", err)
			}
			// A Send waiting for room goes through once the topic exists.
			waiting := make(chan error, 1)
			go p.Send(ctx, &sdk.Record{Topic: topic, Value: make([]byte, 900)}, func(_ *sdk.Record, err error) { waiting <- err })
			createTopic(t, a, topic, 1, nil)
			if err := <-waiting; err != nil {
				t.Fatalf("Send after the buffer drained: %v", err)
			}
			wg.Wait()
			if len(failed) > 0 {
				t.Fatalf("buffered records failed: %v", failed)
			}
			lag, err := a.GroupLag(ctx, "none", topic)
			if err != nil {
				t.Fatal(err)
			}
			if lag[0].End != int64(buffered+1) {
				t.Fatalf("end offset %d, want %d (buffered + the one that waited)", lag[0].End, buffered+1)
			}
		})
	}
}
