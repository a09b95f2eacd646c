package txn

// The __transaction_state record format is Kafka's (kmsg's TxnMetadataKey
// and TxnMetadataValue, TransactionLog in Kafka):
//
//   - key version 0: the transactional id.
//   - value versions 0 and 1 are read. Version 0 (producer id and epoch,
//     timeout, state, partitions, last update and start timestamps) is
//     written for transaction version 0 and 1 clients, version 1 (the same
//     and, as tagged fields, the previous and next producer ids and the
//     client's transaction version) for transactions v2, as Kafka 4 writes.
//   - a null value is a tombstone: the transactional id expired.

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func stateKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version, k.TransactionalID = 0, id
	return k.AppendTo(nil)
}

func stateValue(m *txnMeta) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = 0
	if m.clientTV >= 2 {
		v.Version = 1
		v.PreviousProducerID, v.NextProducerID, v.ClientTransactionVersion = m.prevProducerID, m.nextProducerID, m.clientTV
	}
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = m.producerID, m.epoch, m.timeoutMs
	v.State = m.state
	v.LastUpdateTimestamp, v.StartTimestamp = m.lastUpdate, m.start
	for _, tp := range m.sortedPartitions() {
		if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewTxnMetadataValueTopic()
			t.Topic = tp.Topic
			v.Topics = append(v.Topics, t)
		}
		t := &v.Topics[len(v.Topics)-1]
		t.Partitions = append(t.Partitions, tp.Partition)
	}
	return v.AppendTo(nil)
}

// decodeStateKey decodes a key; ErrCorruptRecord for any other version.
func decodeStateKey(b []byte) (string, error) {
	if len(b) < 2 {
		return "", fmt.Errorf("%w: key of %d bytes", ErrCorruptRecord, len(b))
	}
	if version := int16(b[0])<<8 | int16(b[1]); version != 0 {
		return "", fmt.Errorf("%w: key version %d", ErrCorruptRecord, version)
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(b); err != nil {
		return "", fmt.Errorf("%w: key: %v", ErrCorruptRecord, err)
	}
	return k.TransactionalID, nil
}

// decodeStateValue decodes a non-null value of id.
func decodeStateValue(id string, b []byte) (*txnMeta, error) {
	v := kmsg.NewTxnMetadataValue() // absent tags keep their defaults (-1)
	if err := v.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("%w: value: %v", ErrCorruptRecord, err)
	}
	if v.Version > 1 {
		return nil, fmt.Errorf("%w: value version %d", ErrCorruptRecord, v.Version)
	}
	if v.State > kmsg.TransactionStatePrepareEpochFence {
		return nil, fmt.Errorf("%w: state %d", ErrCorruptRecord, v.State)
	}
	m := &txnMeta{id: id, producerID: v.ProducerID, prevProducerID: -1, nextProducerID: -1, epoch: v.ProducerEpoch, lastEpoch: -1, timeoutMs: v.TimeoutMillis,
		state: v.State, lastUpdate: v.LastUpdateTimestamp, start: v.StartTimestamp, partitions: map[TopicPartition]struct{}{}}
	if v.Version >= 1 {
		m.prevProducerID, m.nextProducerID, m.clientTV = v.PreviousProducerID, v.NextProducerID, v.ClientTransactionVersion
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.partitions[TopicPartition{t.Topic, p}] = struct{}{}
		}
	}
	return m, nil
}

// TopicPartition names a partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (m *txnMeta) sortedPartitions() []TopicPartition {
	out := make([]TopicPartition, 0, len(m.partitions))
	for tp := range m.partitions {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}
