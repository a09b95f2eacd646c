package loadbench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// QuotaPhase is what a client held to a byte-rate quota got: the value
// bytes it moved from its first throttle (the end of the burst a fresh
// rate allows) to the end of the phase, over that time.
type QuotaPhase struct {
	Quota     float64       // the configured bytes per second
	Bytes     int64         // value bytes acknowledged or received in the steady part
	Steady    time.Duration // from the first throttle to the end
	Burst     int64         // value bytes before the first throttle
	Throttles int64         // throttles franz-go was told of (OnBrokerThrottle)
}

// Rate is the steady part's value bytes per second.
func (p QuotaPhase) Rate() float64 {
	if p.Steady <= 0 {
		return 0
	}
	return float64(p.Bytes) / p.Steady.Seconds()
}

// quotaClock notes franz-go's throttles and when the first came.
type quotaClock struct {
	n     atomic.Int64
	first atomic.Int64 // unix nanoseconds; 0 until the first throttle
}

func (c *quotaClock) OnBrokerThrottle(_ kgo.BrokerMetadata, _ time.Duration, _ bool) {
	c.n.Add(1)
	c.first.CompareAndSwap(0, time.Now().UnixNano())
}

// count adds n bytes seen at now to the steady part or to the burst.
func (c *quotaClock) count(steady, burst *atomic.Int64, n int64) {
	if c.first.Load() != 0 {
		steady.Add(n)
	} else {
		burst.Add(n)
	}
}

func (c *quotaClock) phase(q float64, steady, burst *atomic.Int64, end time.Time) (QuotaPhase, error) {
	first := c.first.Load()
	if first == 0 {
		return QuotaPhase{}, fmt.Errorf("loadbench: no throttle within the phase (quota %.0f B/s)", q)
	}
	return QuotaPhase{Quota: q, Bytes: steady.Load(), Steady: end.Sub(time.Unix(0, first)), Burst: burst.Load(), Throttles: c.n.Load()}, nil
}

// SetClientQuota sets one quota key of a client id (AlterClientQuotas).
func SetClientQuota(ctx context.Context, srv Server, cfg Config, clientID, key string, v float64) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(srv.Addr())}, cfg.ClientOpts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &clientID}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: key, Value: v}},
	}})
	if err == nil && res[0].Err != nil {
		err = fmt.Errorf("%w: %s", res[0].Err, res[0].ErrMessage)
	}
	return err
}

// ProduceUnderQuota produces cfg's records to cfg.Topic as fast as the
// client may, as clientID (whose producer_byte_rate the caller set to q),
// for d, and returns what it got.
func ProduceUnderQuota(ctx context.Context, srv Server, cfg Config, clientID string, q float64, d time.Duration) (QuotaPhase, error) {
	clock := &quotaClock{}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(srv.Addr()), kgo.ClientID(clientID), kgo.WithHooks(clock),
		kgo.DefaultProduceTopic(cfg.Topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// Batches of 64 KiB: a request is then a small part of a second of
		// the quota, so that where the steady part starts and ends (a
		// response) moves the figure little.
		kgo.ProducerBatchMaxBytes(64 << 10), kgo.RetryTimeout(30 * time.Second),
	}, cfg.ClientOpts...)...)
	if err != nil {
		return QuotaPhase{}, err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	value := make([]byte, cfg.RecordBytes)
	var steady, burst atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var end time.Time
	for i := 0; pctx.Err() == nil; i++ {
		cl.Produce(pctx, &kgo.Record{Value: value, Partition: int32(i) % cfg.Partitions}, func(r *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if firstErr == nil && pctx.Err() == nil {
					firstErr = err
				}
				mu.Unlock()
				return
			}
			if pctx.Err() == nil {
				clock.count(&steady, &burst, int64(len(r.Value)))
			}
		})
	}
	end = time.Now()
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		return QuotaPhase{}, firstErr
	}
	return clock.phase(q, &steady, &burst, end)
}

// ConsumeUnderQuota reads cfg.Topic from the start as clientID (whose
// consumer_byte_rate the caller set to q) for d, and returns what it got.
func ConsumeUnderQuota(ctx context.Context, srv Server, cfg Config, clientID string, q float64, d time.Duration) (QuotaPhase, error) {
	clock := &quotaClock{}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(srv.Addr()), kgo.ClientID(clientID), kgo.WithHooks(clock),
		kgo.ConsumeTopics(cfg.Topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RetryTimeout(30 * time.Second),
	}, cfg.ClientOpts...)...)
	if err != nil {
		return QuotaPhase{}, err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var steady, burst atomic.Int64
	for {
		fs := cl.PollFetches(cctx)
		if cctx.Err() != nil {
			break
		}
		var fetchErr error
		fs.EachError(func(t string, p int32, err error) { fetchErr = fmt.Errorf("fetch %s-%d: %w", t, p, err) })
		if fetchErr != nil {
			return QuotaPhase{}, fetchErr
		}
		fs.EachRecord(func(r *kgo.Record) { clock.count(&steady, &burst, int64(len(r.Value))) })
	}
	return clock.phase(q, &steady, &burst, time.Now())
}
