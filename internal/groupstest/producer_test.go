package groupstest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// producer writes a topic's records in the background (startProducer) and
// keeps the values the brokers acknowledged.
type producer struct {
	acked  sync.Map // value -> true
	cancel context.CancelFunc
	done   chan struct{} // closed when the producer has ended
}

// startProducer writes the values v-0 to v-<total-1> to topic in the
// background, 50 to a ProduceSync, round robin over its partitions, 30 ms
// apart, on a client of its own; extra, when not nil, adds records to the
// ProduceSync that starts at value i. It ends after the last value, or
// once ctx ends or stop is called; done is closed then.
func (c *cluster) startProducer(ctx context.Context, topic string, total int, extra func(i int) []*kgo.Record) *producer {
	p := &producer{done: make(chan struct{})}
	ctx, p.cancel = context.WithCancel(ctx)
	go func() { // ends after total records or on stop
		defer close(p.done)
		pcl := c.Client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordDeliveryTimeout(60*time.Second))
		for i := 0; i < total && ctx.Err() == nil; i += 50 {
			recs := make([]*kgo.Record, 0, 52)
			for j := i; j < i+50; j++ {
				recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("v-%d", j))})
			}
			if extra != nil {
				recs = append(recs, extra(i)...)
			}
			for _, r := range pcl.ProduceSync(ctx, recs...) {
				if r.Err == nil {
					p.acked.Store(string(r.Record.Value), true)
				}
			}
			sleepCtx(ctx, 30*time.Millisecond)
		}
	}()
	return p
}

// stop ends the producer and waits until it has.
func (p *producer) stop() { p.cancel(); <-p.done }

// ackedValues returns the acknowledged values, in no order.
func (p *producer) ackedValues() []string {
	var vs []string
	p.acked.Range(func(k, _ any) bool { vs = append(vs, k.(string)); return true })
	return vs
}
