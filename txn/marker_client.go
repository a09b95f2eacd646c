package txn

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KafkaMarkers is the MarkerWriter between brokers: WriteTxnMarkers sent
// with a Kafka client (franz-go), which finds each partition's leader
// from the cluster's metadata and splits the request by leader. It dials
// lazily; Close closes its connections.
type KafkaMarkers struct {
	seeds func() []string
	opts  []kgo.Opt

	mu struct {
		sync.Mutex
		cl     *kgo.Client
		closed bool
	}
}

// NewKafkaMarkers returns a marker writer that bootstraps from seeds
// (host:port of brokers, this node's own address is enough); opts are
// the client's connection options (the inter-broker listener's TLS and
// SASL: interbroker.Dialer.KgoOpts).
func NewKafkaMarkers(seeds func() []string, opts ...kgo.Opt) *KafkaMarkers {
	return &KafkaMarkers{seeds: seeds, opts: slices.Clip(opts)}
}

func (k *KafkaMarkers) client() (*kgo.Client, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.mu.closed {
		return nil, ErrClosed
	}
	if k.mu.cl == nil {
		cl, err := kgo.NewClient(append(k.opts, kgo.SeedBrokers(k.seeds()...), kgo.ClientID("shale-txn-markers"), kgo.RequestRetries(0))...)
		if err != nil {
			return nil, err
		}
		k.mu.cl = cl
	}
	return k.mu.cl, nil
}

// WriteMarkers implements MarkerWriter.
func (k *KafkaMarkers) WriteMarkers(ctx context.Context, m Markers) map[TopicPartition]error {
	fail := func(err error) map[TopicPartition]error {
		out := make(map[TopicPartition]error, len(m.Partitions))
		for _, tp := range m.Partitions {
			out[tp] = err
		}
		return out
	}
	cl, err := k.client()
	if err != nil {
		return fail(err)
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	rm := kmsg.NewWriteTxnMarkersRequestMarker()
	rm.ProducerID, rm.ProducerEpoch, rm.Committed, rm.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
	rm.TransactionVersion = m.TransactionVersion // sent from v2 on; franz-go picks v2 from Shale's ApiVersions
	for _, tp := range m.Partitions {
		if n := len(rm.Topics); n == 0 || rm.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic = tp.Topic
			rm.Topics = append(rm.Topics, t)
		}
		t := &rm.Topics[len(rm.Topics)-1]
		t.Partitions = append(t.Partitions, tp.Partition)
	}
	req.Markers = append(req.Markers, rm)
	out := fail(fmt.Errorf("%w: no answer for the partition", ErrCoordinatorNotAvailable))
	refresh := false
	for _, sh := range cl.RequestSharded(ctx, req) {
		if sh.Err != nil {
			// The leader's partitions fail with the cause (a refused
			// inter-broker login is worth a log line, see Coordinator).
			refresh = true
			if sreq, ok := sh.Req.(*kmsg.WriteTxnMarkersRequest); ok {
				for _, rm := range sreq.Markers {
					for _, t := range rm.Topics {
						for _, p := range t.Partitions {
							out[TopicPartition{t.Topic, p}] = fmt.Errorf("%w: %w", ErrCoordinatorNotAvailable, sh.Err)
						}
					}
				}
			}
			continue
		}
		resp := sh.Resp.(*kmsg.WriteTxnMarkersResponse)
		for _, rm := range resp.Markers {
			for _, t := range rm.Topics {
				for _, p := range t.Partitions {
					tp := TopicPartition{t.Topic, p.Partition}
					switch err := kerr.ErrorForCode(p.ErrorCode); {
					case err == nil:
						delete(out, tp)
					default:
						out[tp] = err
						refresh = true
					}
				}
			}
		}
	}
	if refresh {
		cl.ForceMetadataRefresh()
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Close closes the client. Idempotent.
func (k *KafkaMarkers) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.mu.closed && k.mu.cl != nil {
		k.mu.cl.Close()
	}
	k.mu.closed = true
}
