package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/shale-io/shale/group"
	"github.com/shale-io/shale/segment/batch"
)

// The adversarial producer of the transactional workload (issue 22): while
// the read-process-write pipeline runs, it sends the requests that could
// open a transaction no coordinator knows, or keep the pipeline's from
// ending, each of which a node must refuse:
//
//   - a transactional batch with no transactional id, of a made-up
//     producer id (it would hold the partition's last stable offset for
//     ever);
//   - a transactional batch with no transactional id, of the pipeline's
//     producer id at an epoch above its current one (it would fence the
//     pipeline's markers in the partition);
//   - a transactional batch under the pipeline's transactional id at an
//     epoch below its current one (a stale epoch: INVALID_PRODUCER_EPOCH);
//   - a TxnOffsetCommit v4 and one v5 for the pipeline's group, of a
//     made-up producer id under a transactional id nobody uses (it would
//     open a transaction in the group's __consumer_offsets partition that
//     stops its compaction and answers RequireStable fetches
//     UNSTABLE_OFFSET_COMMIT for ever).
//
// Its batches carry values the pipeline never writes ("adv|..."), so one
// that got into the output would also be INCONSISTENT. The checker counts
// each acknowledged request as ADVERSARY-ACCEPTED, and after the run every
// partition the pipeline and the adversary touched must reach a last
// stable offset equal to its high watermark (LSO-STUCK otherwise).

// AdversaryHistory is what the adversarial producer did.
type AdversaryHistory struct {
	// Sent and Refused count its requests by kind; a request that got no
	// answer (a fault) is in neither Refused nor Accepted.
	Sent    map[string]int `json:"sent"`
	Refused map[string]int `json:"refused"`
	// Codes counts the refusals by kind and error.
	Codes map[string]int `json:"codes"`
	// Accepted lists the requests a node acknowledged (at most MaxDetails).
	Accepted      []string `json:"accepted,omitempty"`
	AcceptedTotal int      `json:"accepted_total"`
}

// StableOffset is a partition's last stable offset and high watermark
// after the run (LSO-STUCK when they differ).
type StableOffset struct {
	TP
	LSO int64  `json:"lso"`
	HW  int64  `json:"hw"`
	Err string `json:"err,omitempty"`
}

// adversaryInterval is the pause between two rounds of the adversary's
// requests (one of each kind).
const adversaryInterval = 300 * time.Millisecond

type adversary struct {
	in, out topicSpec
	// clients: one held to Kafka 3.9's versions (Produce v11,
	// TxnOffsetCommit v4: transactions v1) and one at the newest (v13,
	// v5); the rounds alternate.
	clients []*kgo.Client
	rec     *recorder
	done    chan struct{}
	rng     *rand.Rand

	mu sync.Mutex
	h  AdversaryHistory
}

func newAdversary(seeds []string, in topicSpec, rec *recorder, seed int64) (*adversary, error) {
	a := &adversary{in: in, out: etlOutputTopic(in), rec: rec, done: make(chan struct{}),
		rng: rand.New(rand.NewPCG(uint64(seed), 22)),
		h:   AdversaryHistory{Sent: map[string]int{}, Refused: map[string]int{}, Codes: map[string]int{}}}
	for _, max := range []*kversion.Versions{kversion.V3_9_0(), nil} {
		opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.RequestRetries(0), kgo.RequestTimeoutOverhead(5 * time.Second)}
		if max != nil {
			opts = append(opts, kgo.MaxVersions(max))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			a.close()
			return nil, err
		}
		a.clients = append(a.clients, cl)
	}
	return a, nil
}

func (a *adversary) close() {
	for _, cl := range a.clients {
		cl.Close()
	}
}

// run sends a round of requests every adversaryInterval until ctx ends.
func (a *adversary) run(ctx context.Context) {
	defer close(a.done)
	defer a.close()
	madeUp := int64(1) << 50 // far above what the cluster allocates
	for round := 0; ctx.Err() == nil; round++ {
		cl := a.clients[round%len(a.clients)]
		madeUp++
		a.produce(ctx, cl, "no-txn-id/made-up-pid", nil, madeUp, 0, a.pick())
		if pid, epoch, ok := a.pipelineProducer(ctx, cl); ok {
			a.produce(ctx, cl, "no-txn-id/pipeline-pid-newer-epoch", nil, pid, epoch+1, a.out.name)
			if epoch > 0 {
				id := etlTxnID
				a.produce(ctx, cl, "pipeline-txn-id/stale-epoch", &id, pid, epoch-1, a.out.name)
			}
		}
		a.txnOffsetCommit(ctx, cl, fmt.Sprintf("chaos-adv-%d", round), madeUp)
		select {
		case <-ctx.Done():
		case <-time.After(adversaryInterval):
		}
	}
}

// pick is the input or the output topic.
func (a *adversary) pick() string {
	if a.rng.IntN(2) == 0 {
		return a.in.name
	}
	return a.out.name
}

// pipelineProducer is the pipeline's producer id and the highest epoch
// the output's partitions know of it (DescribeProducers).
func (a *adversary) pipelineProducer(ctx context.Context, cl *kgo.Client) (int64, int16, bool) {
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic = a.out.name
	for p := range a.out.parts {
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return 0, 0, false
	}
	pid, epoch, ok := int64(-1), int16(-1), false
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			for _, ap := range p.ActiveProducers {
				// The pipeline is the output's only transactional
				// producer; a rollover to a new producer id starts at
				// epoch 0 again, so the higher id is the current one.
				if ap.ProducerID > pid || ap.ProducerID == pid && int16(ap.ProducerEpoch) > epoch {
					pid, epoch, ok = ap.ProducerID, int16(ap.ProducerEpoch), true
				}
			}
		}
	}
	return pid, epoch, ok
}

// produce sends one transactional batch of producer pid at epoch to a
// partition of topic with transactional id id (nil: none).
func (a *adversary) produce(ctx context.Context, cl *kgo.Client, kind string, id *string, pid int64, epoch int16, topic string) {
	parts := a.in.parts
	if topic == a.out.name {
		parts = a.out.parts
	}
	p := a.rng.Int32N(parts)
	opts := batch.NoProducer()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = pid, epoch, 0, true
	opts.FirstTimestamp = time.Now().UnixMilli()
	b, err := batch.Build(nil, opts, []batch.Record{{Value: []byte(fmt.Sprintf("adv|%s|%d|%d", kind, pid, epoch))}})
	if err != nil {
		return
	}
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = id, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, b
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	a.sent(kind)
	// To the partition's leader: the client sends a raw Produce to any
	// broker, whose NOT_LEADER_OR_FOLLOWER would test nothing. Produce v13
	// names the topic by id (KIP-516).
	leader, topicID, ok := partitionLeader(rctx, cl, topic, p)
	if !ok {
		return
	}
	rt.TopicID = topicID
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kr, err := cl.Broker(int(leader)).Request(rctx, req)
	if err != nil {
		return
	}
	resp := kr.(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return
	}
	a.answered(kind, resp.Topics[0].Partitions[0].ErrorCode,
		fmt.Sprintf("%s: Produce v%d of producer %d epoch %d to %s-%d", kind, resp.Version, pid, epoch, topic, p))
}

// partitionLeader is topic-p's leader, and the topic's id, as a Metadata
// request answers them.
func partitionLeader(ctx context.Context, cl *kgo.Client, topic string, p int32) (int32, [16]byte, bool) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, [16]byte{}, false
	}
	for _, t := range resp.Topics {
		for _, mp := range t.Partitions {
			if mp.Partition == p && mp.ErrorCode == 0 && mp.Leader >= 0 {
				return mp.Leader, t.TopicID, true
			}
		}
	}
	return 0, [16]byte{}, false
}

// txnOffsetCommit commits an offset of the input's partition 0 for the
// pipeline's group as made-up producer pid under transactional id id.
func (a *adversary) txnOffsetCommit(ctx context.Context, cl *kgo.Client, id string, pid int64) {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = id, etlGroup, pid, 0, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = a.in.name
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	const kind = "txn-offset-commit/made-up-pid"
	a.sent(kind)
	resp, err := req.RequestWith(rctx, cl)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return
	}
	a.answered(kind, resp.Topics[0].Partitions[0].ErrorCode,
		fmt.Sprintf("%s: TxnOffsetCommit v%d of producer %d (transactional id %s) for group %s", kind, resp.Version, pid, id, etlGroup))
}

func (a *adversary) sent(kind string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.h.Sent[kind]++
}

func (a *adversary) answered(kind string, code int16, what string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if code != 0 {
		a.h.Refused[kind]++
		a.h.Codes[kind+" "+errName(code)]++
		return
	}
	a.h.AcceptedTotal++
	if len(a.h.Accepted) < MaxDetails {
		a.h.Accepted = append(a.h.Accepted, what)
	}
	if a.h.AcceptedTotal <= 5 {
		a.rec.logf("adversary: a node acknowledged %s", what)
	}
}

func errName(code int16) string {
	if ke, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return ke.Message
	}
	return fmt.Sprint(code)
}

// history returns a copy of what the adversary did. Call after run ended.
func (a *adversary) history() *AdversaryHistory {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := a.h
	return &h
}

// stableOffsets waits (at most d) until every partition of topics, and
// the pipeline group's __consumer_offsets partition, has its last stable
// offset at its high watermark, and returns what each had last. A
// transaction the pipeline left open when it stopped ends by its timeout
// meanwhile.
func stableOffsets(ctx context.Context, adm *kadm.Client, topics []topicSpec, d time.Duration) []StableOffset {
	var tps []TP
	for _, t := range topics {
		for p := range t.parts {
			tps = append(tps, TP{t.name, p})
		}
	}
	tps = append(tps, TP{group.OffsetsTopic, group.PartitionFor(etlGroup, 50)})
	names := map[string]bool{}
	for _, tp := range tps {
		names[tp.Topic] = true
	}
	var list []string
	for n := range names {
		list = append(list, n)
	}
	var out []StableOffset
	poll(d, time.Second, func() bool {
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		lsos, err1 := adm.ListCommittedOffsets(lctx, list...)
		hws, err2 := adm.ListEndOffsets(lctx, list...)
		out = out[:0]
		stable := true
		for _, tp := range tps {
			so := StableOffset{TP: tp, LSO: -1, HW: -1}
			l, ok1 := lsos.Lookup(tp.Topic, tp.Partition)
			h, ok2 := hws.Lookup(tp.Topic, tp.Partition)
			switch {
			case err1 != nil || err2 != nil || !ok1 || !ok2 || l.Err != nil || h.Err != nil:
				so.Err = fmt.Sprintf("list offsets: %v %v %v %v", err1, err2, l.Err, h.Err)
				stable = false
			default:
				so.LSO, so.HW = l.Offset, h.Offset
				stable = stable && so.LSO == so.HW
			}
			out = append(out, so)
		}
		return stable
	})
	return out
}
