package share

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KafkaPersister is the Persister of share-partition leaders: it sends
// ReadShareGroupState and WriteShareGroupState to the share coordinator
// of each key, the leader of its __share_group_state partition, over the
// Kafka protocol (this node included), as Kafka's DefaultStatePersister
// does. Safe for concurrent use; Close ends its client.
type KafkaPersister struct {
	seeds      func() []string
	opts       []kgo.Opt
	partitions int32
	// leader names the node leading a __share_group_state partition.
	leader func(p int32) (int32, bool)
	// ensure creates __share_group_state unless it exists.
	ensure func(ctx context.Context) error

	mu      sync.Mutex
	cl      *kgo.Client
	ensured bool
	closed  bool
}

// ErrStateUnavailable: the share coordinator did not answer in time
// (COORDINATOR_NOT_AVAILABLE to the share consumer, which retries).
var ErrStateUnavailable = errors.New("share: share coordinator not available")

// NewKafkaPersister returns a persister bootstrapping from seeds with
// opts (the inter-broker client options).
func NewKafkaPersister(seeds func() []string, partitions int32, leader func(int32) (int32, bool), ensure func(context.Context) error, opts ...kgo.Opt) *KafkaPersister {
	if partitions <= 0 {
		partitions = DefaultStatePartitions
	}
	return &KafkaPersister{seeds: seeds, partitions: partitions, leader: leader, ensure: ensure, opts: opts}
}

// Close ends the client. Idempotent.
func (k *KafkaPersister) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	if k.cl != nil {
		k.cl.Close()
		k.cl = nil
	}
}

func (k *KafkaPersister) client(ctx context.Context) (*kgo.Client, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil, fmt.Errorf("%w: closed", ErrStateUnavailable)
	}
	if !k.ensured && k.ensure != nil {
		if err := k.ensure(ctx); err != nil {
			return nil, fmt.Errorf("%w: creating %s: %w", ErrStateUnavailable, StateTopic, err)
		}
		k.ensured = true
	}
	if k.cl == nil {
		cl, err := kgo.NewClient(append(k.opts, kgo.SeedBrokers(k.seeds()...), kgo.ClientID("shale-share-persister"), kgo.RequestRetries(0))...)
		if err != nil {
			return nil, err
		}
		k.cl = cl
	}
	return k.cl, nil
}

// EndOffsets asks the leaders of topic's partitions for their ends
// (ListOffsets latest, read_committed when readCommitted): what
// Config.EndOffsets needs. A partition whose leader answers an error is
// left out.
func (k *KafkaPersister) EndOffsets(ctx context.Context, topic string, partitions []int32, readCommitted bool) (map[int32]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cl, err := k.client(ctx)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	if readCommitted {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	out := map[int32]int64{}
	var first error
	for _, sh := range cl.RequestSharded(ctx, req) {
		if sh.Err != nil {
			first = cmp.Or(first, sh.Err)
			continue
		}
		for _, t := range sh.Resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == 0 && t.Topic == topic {
					out[p.Partition] = p.Offset
				} else if p.ErrorCode != 0 {
					first = cmp.Or(first, error(kerr.ErrorForCode(p.ErrorCode)))
				}
			}
		}
	}
	return out, first
}

// request sends req to the coordinator of key, retrying while the
// coordinator moves or loads, for at most 10 s.
func (k *KafkaPersister) request(ctx context.Context, key StateKey, req kmsg.Request, code func(kmsg.Response) int16) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p := StatePartitionFor(key, k.partitions)
	var last error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("%w: %s-%d: %w", ErrStateUnavailable, StateTopic, p, last)
			case <-time.After(time.Duration(min(attempt, 10)) * 50 * time.Millisecond):
			}
		}
		cl, err := k.client(ctx)
		if err != nil {
			last = err
			continue
		}
		id, ok := k.leader(p)
		if !ok {
			last = fmt.Errorf("no leader")
			continue
		}
		resp, err := cl.Broker(int(id)).Request(ctx, req)
		if err != nil {
			last = err
			// An unknown broker: load the cluster's brokers.
			_, _ = cl.Request(ctx, kmsg.NewPtrMetadataRequest())
			continue
		}
		if c := code(resp); c != 0 {
			last = kerr.ErrorForCode(c)
			if c == kerr.FencedStateEpoch.Code {
				return nil, fmt.Errorf("%w: %w", ErrFencedStateEpoch, last)
			}
			continue
		}
		return resp, nil
	}
}

// Load implements Persister.
func (k *KafkaPersister) Load(ctx context.Context, key StateKey) (*Snapshot, error) {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = key.Group
	t := kmsg.NewReadShareGroupStateRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewReadShareGroupStateRequestTopicPartition()
	p.Partition, p.LeaderEpoch = key.Partition, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	first := func(r kmsg.Response) *kmsg.ReadShareGroupStateResponseTopicPartition {
		resp := r.(*kmsg.ReadShareGroupStateResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return nil
		}
		return &resp.Topics[0].Partitions[0]
	}
	resp, err := k.request(ctx, key, req, func(r kmsg.Response) int16 {
		if rp := first(r); rp != nil {
			return rp.ErrorCode
		}
		return kerr.UnknownServerError.Code
	})
	if err != nil {
		return nil, err
	}
	rp := first(resp)
	if rp.StartOffset < 0 && len(rp.StateBatches) == 0 && rp.StateEpoch == 0 {
		return nil, nil
	}
	s := &Snapshot{StateEpoch: rp.StateEpoch, StartOffset: rp.StartOffset}
	for _, b := range rp.StateBatches {
		s.Batches = append(s.Batches, StateBatch{First: b.FirstOffset, Last: b.LastOffset, State: DeliveryState(b.DeliveryState), DeliveryCount: b.DeliveryCount})
	}
	return s, nil
}

// Save implements Persister.
func (k *KafkaPersister) Save(ctx context.Context, key StateKey, s Snapshot) error {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = key.Group
	t := kmsg.NewWriteShareGroupStateRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset = key.Partition, s.StateEpoch, s.LeaderEpoch, s.StartOffset
	for _, b := range s.Batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.First, b.Last, int8(b.State), b.DeliveryCount
		p.StateBatches = append(p.StateBatches, sb)
	}
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	_, err := k.request(ctx, key, req, func(r kmsg.Response) int16 {
		resp := r.(*kmsg.WriteShareGroupStateResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return kerr.UnknownServerError.Code
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	})
	return err
}
