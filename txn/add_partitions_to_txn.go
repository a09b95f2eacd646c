package txn

// AddPartitionsToTxn (key 24), versions 0-5.
//
//   - v0-v3: one transaction, from its producer: the partitions join the
//     ongoing transaction (starting one when none is). A partition of a
//     topic that does not exist gets UNKNOWN_TOPIC_OR_PARTITION and the
//     others OPERATION_NOT_ATTEMPTED, as in Kafka.  v2: PRODUCER_FENCED
//     (INVALID_PRODUCER_EPOCH before).  v3: flexible versions.
//   - v4: a batch of transactions, sent by partition leaders (KIP-890
//     part 1): with VerifyOnly the coordinator only checks that each
//     partition is in the producer's ongoing transaction
//     (INVALID_TXN_STATE for one that is not), which is how a leader
//     refuses a transactional write that arrives after its transaction
//     ended (a hanging transaction). Without VerifyOnly it is the add of
//     transactions v2 (KIP-890 part 2): a leader that took a Produce v12
//     batch opening the producer's transaction in a partition (or the
//     group coordinator a TxnOffsetCommit v5) adds the partition to the
//     transaction for the client, which sends no AddPartitionsToTxn.
//   - v5: as v4 (Kafka adds TRANSACTION_ABORTABLE to its errors).
//
// Errors otherwise: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
// INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS
// (the transaction before is still completing), INVALID_TXN_STATE.
//
// With an authorizer: v0-v3 (from the producer) need Write on the
// transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every
// partition) and Write on each topic (TOPIC_AUTHORIZATION_FAILED, the other
// partitions OPERATION_NOT_ATTEMPTED); v4+ (from a partition leader or a
// group coordinator) needs ClusterAction on the cluster alone
// (CLUSTER_AUTHORIZATION_FAILED), as in Kafka: the broker checked the id
// and the topics for its client, and checking them again against the
// broker's principal failed every transactional produce of a cluster
// whose inter-broker principal has ClusterAction but is no super user.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

// addTopic is one topic of an add request: its name and partitions.
type addTopic struct {
	topic      string
	partitions []int32
}

func (c *Coordinator) handleAddPartitionsToTxn(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.AddPartitionsToTxnRequest)
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		if req.Version < 4 {
			topics := make([]addTopic, len(r.Topics))
			for i, t := range r.Topics {
				topics[i] = addTopic{t.Topic, t.Partitions}
			}
			codes, denied := c.authorizeAdd(req, r.TransactionalID, topics)
			if !denied {
				codes = c.addOne(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, false, topics, req.Version)
			}
			for _, t := range topics {
				rt := kmsg.NewAddPartitionsToTxnResponseTopic()
				rt.Topic = t.topic
				for _, p := range t.partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, codes[TopicPartition{t.topic, p}]
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil
		}
		if !c.cfg.Authorizer.Authorize(req, acl.OpClusterAction, acl.Cluster) {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp, nil
		}
		for _, tx := range r.Transactions {
			topics := make([]addTopic, len(tx.Topics))
			for i, t := range tx.Topics {
				topics[i] = addTopic{t.Topic, t.Partitions}
			}
			// No Write check on the id or the topics: the caller is a
			// broker, which checked them for its client (Kafka
			// authorizes them only below v4).
			codes := c.addOne(ctx, tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly, topics, req.Version)
			rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rtx.TransactionalID = tx.TransactionalID
			for _, t := range topics {
				rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				rt.Topic = t.topic
				for _, p := range t.partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					rp.Partition, rp.ErrorCode = p, codes[TopicPartition{t.topic, p}]
					rt.Partitions = append(rt.Partitions, rp)
				}
				rtx.Topics = append(rtx.Topics, rt)
			}
			resp.Transactions = append(resp.Transactions, rtx)
		}
		return resp, nil
	}}, nil
}

// authorizeAdd checks Write on the transactional id and on each topic of
// an add, as Kafka: when one is refused it returns the codes to answer
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition; or
// TOPIC_AUTHORIZATION_FAILED for the refused topics and
// OPERATION_NOT_ATTEMPTED for the others) and true.
func (c *Coordinator) authorizeAdd(req *kafka.Request, id string, topics []addTopic) (map[TopicPartition]int16, bool) {
	az := c.cfg.Authorizer
	if !az.Enabled() {
		return nil, false
	}
	codes := map[TopicPartition]int16{}
	set := func(code func(topic string) int16) {
		for _, t := range topics {
			for _, p := range t.partitions {
				codes[TopicPartition{t.topic, p}] = code(t.topic)
			}
		}
	}
	if !az.Authorize(req, acl.OpWrite, acl.TransactionalID(id)) {
		set(func(string) int16 { return kerr.TransactionalIDAuthorizationFailed.Code })
		return codes, true
	}
	refused := map[string]bool{}
	for _, t := range topics {
		if _, seen := refused[t.topic]; !seen {
			refused[t.topic] = !az.Authorize(req, acl.OpWrite, acl.Topic(t.topic))
		}
	}
	for _, r := range refused {
		if r {
			set(func(topic string) int16 {
				if refused[topic] {
					return kerr.TopicAuthorizationFailed.Code
				}
				return kerr.OperationNotAttempted.Code
			})
			return codes, true
		}
	}
	return nil, false
}

// addOne serves one transaction of an AddPartitionsToTxn: a code per
// partition (0 for success).
func (c *Coordinator) addOne(ctx context.Context, id string, pid int64, epoch int16, verifyOnly bool, topics []addTopic, version int16) map[TopicPartition]int16 {
	codes := map[TopicPartition]int16{}
	var tps []TopicPartition
	for _, t := range topics {
		for _, p := range t.partitions {
			tps = append(tps, TopicPartition{t.topic, p})
		}
	}
	all := func(code int16) map[TopicPartition]int16 {
		for _, tp := range tps {
			codes[tp] = code
		}
		return codes
	}
	if verifyOnly {
		bad, err := c.verifyPartitions(id, pid, epoch, tps)
		if err != nil {
			return all(fencedCode(err, version, 2))
		}
		for _, tp := range tps {
			codes[tp] = 0
			if err := bad[tp]; err != nil {
				codes[tp] = ErrorCode(err)
			}
		}
		return codes
	}
	unknown := false
	for _, tp := range tps {
		if n, ok := c.cluster.Partitions(tp.Topic); !ok || tp.Partition < 0 || tp.Partition >= n {
			codes[tp] = kerr.UnknownTopicOrPartition.Code
			unknown = true
		}
	}
	if unknown {
		for _, tp := range tps {
			if codes[tp] == 0 {
				codes[tp] = kerr.OperationNotAttempted.Code
			}
		}
		return codes
	}
	tv := int16(0)
	if version >= 4 {
		tv = 2 // a leader's add: the client's Produce v12 or TxnOffsetCommit v5
	}
	if err := c.addPartitions(ctx, id, pid, epoch, tps, tv); err != nil {
		return all(fencedCode(err, version, 2))
	}
	return all(0)
}
