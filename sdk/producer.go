package sdk

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Producer writes records to Shale. It batches per partition (WithLinger,
// WithBatchSize), bounds its memory (WithBufferMemory,
// WithMaxBufferedRecords), compresses (WithCompression), and is idempotent
// with acks=all unless told otherwise. Keyed records go to
// KeyPartition(key, partitions), as with the Java client; unkeyed ones
// stick to one partition per batch.
//
// Records of one partition are written in the order they were sent. All
// methods are safe for concurrent use.
type Producer struct {
	cl     *kgo.Client
	closed atomic.Bool
}

// NewProducer returns a producer; it connects lazily, on the first send.
func NewProducer(opts ...Option) (*Producer, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	o := c.clientOpts()
	o = append(o,
		kgo.ProducerLinger(c.linger),
		kgo.ProducerBatchMaxBytes(c.batchBytes),
		kgo.MaxBufferedBytes(c.bufferBytes),
		kgo.MaxBufferedRecords(c.bufferRecords),
		kgo.RecordPartitioner(partitioner()),
		kgo.ProducerBatchCompression(codec(c.compression)),
	)
	switch c.acks {
	case AcksNone:
		o = append(o, kgo.RequiredAcks(kgo.NoAck()))
	case AcksLeader:
		o = append(o, kgo.RequiredAcks(kgo.LeaderAck()))
	default:
		o = append(o, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if !c.idempotent {
		o = append(o, kgo.DisableIdempotentWrite())
	}
	if c.deliveryTimeout > 0 {
		o = append(o, kgo.RecordDeliveryTimeout(c.deliveryTimeout))
	}
	cl, err := kgo.NewClient(append(o, c.extra...)...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return &Producer{cl: cl}, nil
}

func codec(c Compression) kgo.CompressionCodec {
	switch c {
	case CompressionGzip:
		return kgo.GzipCompression()
	case CompressionSnappy:
		return kgo.SnappyCompression()
	case CompressionLZ4:
		return kgo.Lz4Compression()
	case CompressionZstd:
		return kgo.ZstdCompression()
	default:
		return kgo.NoCompression()
	}
}

// Send buffers r for sending and returns; done (which may be nil) is called
// once with r and the outcome: nil when the broker acknowledged it, with
// r.Partition and r.Offset set. Callbacks run one at a time, in order per
// partition, and must not block on the producer (no Flush, no blocking
// Send) or they stall it.
//
// When the buffer is full Send blocks until records are acknowledged and
// make room (backpressure), or until ctx ends: then done gets ctx's error.
// Until r is sent in a request, ending ctx also fails it.
func (p *Producer) Send(ctx context.Context, r *Record, done func(*Record, error)) {
	if p.closed.Load() {
		callback(done)(r, ErrClosed)
		return
	}
	p.cl.Produce(ctx, r, callback(done))
}

// TrySend is Send without the wait: when the buffer is full, done gets
// ErrBufferFull at once (wrapped with kgo.ErrMaxBuffered).
func (p *Producer) TrySend(ctx context.Context, r *Record, done func(*Record, error)) {
	if p.closed.Load() {
		callback(done)(r, ErrClosed)
		return
	}
	cb := callback(done)
	p.cl.TryProduce(ctx, r, func(r *Record, err error) {
		if errors.Is(err, kgo.ErrMaxBuffered) {
			err = fmt.Errorf("%w: %w", ErrBufferFull, err)
		}
		cb(r, err)
	})
}

func callback(done func(*Record, error)) func(*Record, error) {
	if done == nil {
		return func(*Record, error) {}
	}
	return done
}

// SendSync sends records and waits for all of them; it returns nil when
// every one was acknowledged (their partitions and offsets set), or the
// errors of those that failed, joined.
func (p *Producer) SendSync(ctx context.Context, records ...*Record) error {
	if p.closed.Load() {
		return ErrClosed
	}
	var errs []error
	for _, res := range p.cl.ProduceSync(ctx, records...) {
		if res.Err != nil {
			errs = append(errs, res.Err)
		}
	}
	return errors.Join(errs...)
}

// Flush sends every buffered record at once (ignoring linger) and waits
// until all are acknowledged or failed, or ctx ends.
func (p *Producer) Flush(ctx context.Context) error {
	return p.cl.Flush(ctx)
}

// BufferedRecords is the number of records sent and not yet acknowledged.
func (p *Producer) BufferedRecords() int64 { return p.cl.BufferedProduceRecords() }

// Client is the underlying franz-go client. The caller must not close it.
func (p *Producer) Client() *kgo.Client { return p.cl }

// Close flushes buffered records until ctx ends, then fails what is left
// and closes the connections. Later sends fail with ErrClosed. It is
// idempotent; calls after the first return nil.
func (p *Producer) Close(ctx context.Context) error {
	if p.closed.Swap(true) {
		return nil
	}
	err := p.cl.Flush(ctx)
	if err != nil {
		p.cl.AbortBufferedRecords(context.Background())
	}
	p.cl.Close()
	return err
}
