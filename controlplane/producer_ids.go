package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// producerIDBlock is how many producer ids a node reserves at once.
const producerIDBlock = 1000

// ProducerIDs hands out producer ids unique across the cluster and across
// restarts: each node reserves blocks by compare-and-set on one key-value
// record (bucket shale_producer_ids, key next_block) holding the next
// unreserved id, as Kafka's controller does with AllocateProducerIds.
// It is safe for concurrent use.
type ProducerIDs struct {
	kv jetstream.KeyValue

	mu        sync.Mutex
	next, end int64 // the current block: [next, end)
}

// OpenProducerIDs opens (creating it if absent) the producer id bucket with
// the given number of JetStream replicas.
func OpenProducerIDs(ctx context.Context, nc *nats.Conn, replicas int) (*ProducerIDs, error) {
	kv, err := OpenBucket(ctx, nc, jetstream.KeyValueConfig{Bucket: "shale_producer_ids", Replicas: replicas})
	if err != nil {
		return nil, err
	}
	return &ProducerIDs{kv: kv}, nil
}

const producerIDKey = "next_block"

// NextProducerID returns an id no other call on any node has returned or
// will return (it implements ingest.ProducerIDs). It reserves a new block
// from the bucket when the current one is used up, and fails when ctx ends
// or the block record cannot be reserved after 20 contended attempts.
func (p *ProducerIDs) NextProducerID(ctx context.Context) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next < p.end {
		id := p.next
		p.next++
		return id, nil
	}
	for attempt := 0; attempt < 20; attempt++ {
		var start int64
		var err error
		entry, gerr := p.kv.Get(ctx, producerIDKey)
		switch {
		case errors.Is(gerr, jetstream.ErrKeyNotFound):
			_, err = p.kv.Create(ctx, producerIDKey, []byte(strconv.FormatInt(producerIDBlock, 10)))
		case gerr != nil:
			return 0, gerr
		default:
			start, err = strconv.ParseInt(string(entry.Value()), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("producer id record %q: %w", entry.Value(), err)
			}
			_, err = p.kv.Update(ctx, producerIDKey, []byte(strconv.FormatInt(start+producerIDBlock, 10)), entry.Revision())
		}
		if err == nil {
			p.next, p.end = start+1, start+producerIDBlock
			return start, nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
	}
	return 0, fmt.Errorf("reserving a producer id block: too much contention")
}

// ReserveAbove makes every block reserved from now on start above id: a
// restore from the bucket calls it with the largest producer id in the
// restored producer snapshots, so that no new producer is handed the id
// of one whose sequence numbers the restored partitions remember.
// Blocks this ProducerIDs already holds are dropped.
func (p *ProducerIDs) ReserveAbove(ctx context.Context, id int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next, p.end = 0, 0
	want := []byte(strconv.FormatInt(id+1, 10))
	for attempt := 0; attempt < 20; attempt++ {
		entry, err := p.kv.Get(ctx, producerIDKey)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			_, err = p.kv.Create(ctx, producerIDKey, want)
		case err != nil:
			return err
		default:
			cur, perr := strconv.ParseInt(string(entry.Value()), 10, 64)
			if perr != nil {
				return fmt.Errorf("producer id record %q: %w", entry.Value(), perr)
			}
			if cur > id {
				return nil
			}
			_, err = p.kv.Update(ctx, producerIDKey, want, entry.Revision())
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return fmt.Errorf("raising the producer id blocks above %d: too much contention", id)
}
