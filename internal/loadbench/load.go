// Package loadbench is the client load benchmark of `make bench`: a franz-go
// producer and consumer driving one Kafka-protocol server (a Shale node or
// franz-go's kfake) that runs as a child process, so that the server's CPU
// time can be read from /proc apart from the client's.
//
// It sits beside internal/benchreport, which prints its figures next to the
// same figures for kfake measured in the same run.
package loadbench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrIncomplete is returned when a phase ends (deadline or error) before all
// records were acknowledged or consumed. The Result still holds what was done.
var ErrIncomplete = errors.New("loadbench: phase incomplete")

// Config describes one load run. The zero value is not usable; start from
// DefaultConfig.
type Config struct {
	Topic        string
	Partitions   int32
	Records      int           // records produced, then consumed
	RecordBytes  int           // value size of each record; keys are nil
	PhaseTimeout time.Duration // bound on each of produce and consume
	// ClientOpts are added to both clients' options: the TLS and SASL
	// options of a SASL_SSL listener (SASLSSL.ClientOpts).
	ClientOpts []kgo.Opt
}

// DefaultConfig is 200k records of 1 KiB over 8 partitions, 2 minutes per phase.
func DefaultConfig() Config {
	return Config{Topic: "bench", Partitions: 8, Records: 200_000, RecordBytes: 1024, PhaseTimeout: 2 * time.Minute}
}

// Server is the system under load: an address and a way to read its CPU time.
type Server interface {
	Addr() string
	// CPUTime is the server's user+system CPU time so far.
	CPUTime() (time.Duration, error)
}

// Phase is what one phase (produce or consume) measured.
type Phase struct {
	Records   int           // records acknowledged (produce) or received (consume)
	Bytes     int64         // value bytes of those records
	Wall      time.Duration // from the first request to the last acknowledgement or record
	ServerCPU time.Duration // server CPU time spent during the phase
}

// MBps is value megabytes (1e6) per second of wall time.
func (p Phase) MBps() float64 {
	if p.Wall <= 0 {
		return 0
	}
	return float64(p.Bytes) / 1e6 / p.Wall.Seconds()
}

// CPUSecPerGB is server CPU seconds per GB (1e9) of value bytes.
func (p Phase) CPUSecPerGB() float64 {
	if p.Bytes == 0 {
		return 0
	}
	return p.ServerCPU.Seconds() / (float64(p.Bytes) / 1e9)
}

// Result is one run: produce every record, then consume them all from the start.
type Result struct {
	Produce, Consume Phase
}

// Run produces cfg.Records records with acks=all (idempotent, no compression,
// each record to partition i mod cfg.Partitions) and then consumes them from
// the start of the topic with a fresh client. The topic must exist. It returns
// ErrIncomplete (wrapped) if a phase did not finish within cfg.PhaseTimeout.
func Run(ctx context.Context, srv Server, cfg Config) (Result, error) {
	var res Result
	var err error
	if res.Produce, err = measure(srv, func() (int, int64, error) { return produce(ctx, srv.Addr(), cfg) }); err != nil {
		return res, fmt.Errorf("produce: %w", err)
	}
	if res.Consume, err = measure(srv, func() (int, int64, error) { return consume(ctx, srv.Addr(), cfg) }); err != nil {
		return res, fmt.Errorf("consume: %w", err)
	}
	return res, nil
}

// measure runs fn between two readings of the server's CPU time and the clock.
func measure(srv Server, fn func() (int, int64, error)) (Phase, error) {
	cpu0, err := srv.CPUTime()
	if err != nil {
		return Phase{}, err
	}
	start := time.Now()
	n, b, runErr := fn()
	wall := time.Since(start)
	cpu1, err := srv.CPUTime()
	if err != nil {
		return Phase{}, err
	}
	return Phase{Records: n, Bytes: b, Wall: wall, ServerCPU: cpu1 - cpu0}, runErr
}

func produce(ctx context.Context, addr string, cfg Config) (int, int64, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryTimeout(30 * time.Second),
	}, cfg.ClientOpts...)...)
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, cfg.PhaseTimeout)
	defer cancel()

	value := make([]byte, cfg.RecordBytes)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	var acked atomic.Int64
	var once sync.Once
	var firstErr error
	done := func(r *kgo.Record, err error) {
		if err != nil {
			once.Do(func() { firstErr = err })
			return
		}
		acked.Add(1)
	}
	for i := 0; i < cfg.Records && ctx.Err() == nil; i++ {
		cl.Produce(ctx, &kgo.Record{Value: value, Partition: int32(i) % cfg.Partitions}, done)
	}
	flushErr := cl.Flush(ctx)
	n := int(acked.Load())
	b := int64(n) * int64(cfg.RecordBytes)
	switch {
	case firstErr != nil && !errors.Is(firstErr, context.DeadlineExceeded):
		return n, b, fmt.Errorf("%w: %d of %d acknowledged: %v", ErrIncomplete, n, cfg.Records, firstErr)
	case flushErr != nil || n < cfg.Records:
		return n, b, fmt.Errorf("%w: %d of %d acknowledged within %v", ErrIncomplete, n, cfg.Records, cfg.PhaseTimeout)
	}
	return n, b, nil
}

func consume(ctx context.Context, addr string, cfg Config) (int, int64, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ConsumeTopics(cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RetryTimeout(30 * time.Second),
	}, cfg.ClientOpts...)...)
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, cfg.PhaseTimeout)
	defer cancel()
	n, b := 0, int64(0)
	for n < cfg.Records {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return n, b, fmt.Errorf("%w: %d of %d consumed within %v", ErrIncomplete, n, cfg.Records, cfg.PhaseTimeout)
		}
		var fetchErr error
		fs.EachError(func(t string, p int32, err error) {
			if fetchErr == nil {
				fetchErr = fmt.Errorf("fetch %s-%d: %w", t, p, err)
			}
		})
		if fetchErr != nil {
			return n, b, fetchErr
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			b += int64(len(r.Value))
		})
	}
	return n, b, nil
}
