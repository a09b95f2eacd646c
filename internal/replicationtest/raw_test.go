package replicationtest

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/segment/batch"
)

// seed returns the connection to n of n's own client.
func (n *node) seed() (*kgo.Broker, error) {
	bs := n.Client().SeedBrokers()
	if len(bs) == 0 {
		return nil, errors.New("no seed broker")
	}
	return bs[0], nil
}

// rawProduce sends one ProduceRequest holding one plain (non-idempotent)
// record with value to partition p of topic on b, with acks and a 2 s
// server timeout, and returns the partition's error code and base offset.
func rawProduce(ctx context.Context, b *kgo.Broker, topic string, p int32, acks int16, value string) (int16, int64, error) {
	opts := batch.NoProducer()
	opts.FirstTimestamp = time.Now().UnixMilli()
	records, err := batch.Build(nil, opts, []batch.Record{{Value: []byte(value)}})
	if err != nil {
		return 0, 0, err
	}
	r, err := produceBatch(ctx, b, topic, p, acks, 2000, records)
	if err != nil {
		return 0, 0, err
	}
	return r.ErrorCode, r.BaseOffset, nil
}

// produceBatch sends b one ProduceRequest (topic named by id too) of
// records to partition p of topic, with acks and timeoutMillis, and
// returns the partition's answer.
func produceBatch(ctx context.Context, b *kgo.Broker, topic string, p int32, acks int16, timeoutMillis int32, records []byte) (kmsg.ProduceResponseTopicPartition, error) {
	id, err := proctest.TopicID(ctx, b, topic)
	if err != nil {
		return kmsg.ProduceResponseTopicPartition{}, err
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, timeoutMillis
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := b.Request(ctx, req)
	if err != nil {
		return kmsg.ProduceResponseTopicPartition{}, err
	}
	resp := kresp.(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kmsg.ProduceResponseTopicPartition{}, errors.New("malformed produce response")
	}
	return resp.Topics[0].Partitions[0], nil
}

// rawReplicaFetch sends b a Fetch of partition p from offset as replica
// replicaID would, claiming currentEpoch, and returns the partition's error
// code.
func rawReplicaFetch(ctx context.Context, b *kgo.Broker, topic string, p, replicaID, currentEpoch int32, offset int64) (int16, error) {
	id, err := proctest.TopicID(ctx, b, topic)
	if err != nil {
		return 0, err
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = replicaID, 0, 1, 1<<20
	req.ReplicaState.ID = replicaID // the replica id from v15 (KIP-903)
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.FetchOffset, rp.PartitionMaxBytes = p, currentEpoch, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := b.Request(ctx, req)
	if err != nil {
		return 0, err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		return resp.ErrorCode, nil
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, errors.New("malformed fetch response")
	}
	return resp.Topics[0].Partitions[0].ErrorCode, nil
}
