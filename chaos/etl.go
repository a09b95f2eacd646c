package chaos

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The transactional read-process-write workload (Config.Transactions): a
// franz-go GroupTransactSession, the client Kafka Streams-style pipelines
// use, reads the plain topic read_committed as a member of its own group
// and writes each record to the output topic (same partition), committing
// its input offsets in the same transaction. Exactly once means: the output
// read read_committed holds each consumed input record once, and nothing
// whose input offset the group has not committed.

const (
	etlGroup  = "chaos-etl"
	etlTxnID  = "chaos-etl"
	etlOutput = "etl-out"
)

// etlOutputTopic is the output topic, partitioned as the input.
func etlOutputTopic(in topicSpec) topicSpec {
	return topicSpec{name: etlOutput, parts: in.parts, configs: map[string]string{"min.insync.replicas": "2",
		"remote.storage.enable": "false"}}
}

// ETLValue is what the workload writes for input record (partition,
// offset, value): "etl|partition|offset|value".
func ETLValue(partition int32, offset int64, value string) string {
	return "etl|" + strconv.Itoa(int(partition)) + "|" + strconv.FormatInt(offset, 10) + "|" + value
}

// ParseETLValue splits an ETLValue; ok is false for anything else.
func ParseETLValue(s string) (partition int32, offset int64, value string, ok bool) {
	rest, ok := strings.CutPrefix(s, "etl|")
	if !ok {
		return 0, 0, "", false
	}
	ps, rest, ok1 := strings.Cut(rest, "|")
	ofs, value, ok2 := strings.Cut(rest, "|")
	p, err1 := strconv.ParseInt(ps, 10, 32)
	o, err2 := strconv.ParseInt(ofs, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		return 0, 0, "", false
	}
	return int32(p), o, value, true
}

// ETLHistory is what the transactional workload recorded.
type ETLHistory struct {
	Input  string `json:"input"`
	Output string `json:"output"`
	Group  string `json:"group"`
	// Committed is the group's committed offset per input partition after
	// the workload stopped (read with require_stable), -1 for none.
	Committed map[int32]int64 `json:"committed"`
	// Outputs is the output topic read read_committed after the run.
	Outputs []FinalRead `json:"outputs"`
	// Commits and Aborts count the transactions the client ended each way;
	// Drained says whether the group's commits reached the input's end
	// before the workload stopped.
	Commits int64 `json:"commits"`
	Aborts  int64 `json:"aborts"`
	// Restarts counts the sessions replaced after End failed.
	Restarts int64 `json:"restarts"`
	// ProduceFailed counts the transactions in which an output record
	// failed (they are aborted).
	ProduceFailed int64  `json:"produce_failed"`
	Drained       bool   `json:"drained"`
	Err           string `json:"err,omitempty"`
	// Adversary is what the adversarial producer did (adversary.go).
	Adversary *AdversaryHistory `json:"adversary,omitempty"`
	// Stable is each partition's last stable offset and high watermark
	// once the workload and the adversary stopped.
	Stable []StableOffset `json:"stable,omitempty"`
}

// etl is the transactional read-process-write actor.
type etl struct {
	name    string
	in, out topicSpec
	seeds   []string
	sess    *kgo.GroupTransactSession // replaced after a failed End
	rec     *recorder
	done    chan struct{}
	// delivery is the session's RecordDeliveryTimeout.
	delivery      time.Duration
	commits       atomic.Int64
	aborts        atomic.Int64
	restarts      atomic.Int64
	produceFailed atomic.Int64
}

// etlDeliveryTimeout is the workload's RecordDeliveryTimeout.
const etlDeliveryTimeout = 20 * time.Second

func newETL(name string, seeds []string, in topicSpec, rec *recorder, delivery time.Duration) (*etl, error) {
	e := &etl{name: name, in: in, out: etlOutputTopic(in), seeds: seeds, rec: rec, done: make(chan struct{}), delivery: delivery}
	if err := e.connect(); err != nil {
		return nil, err
	}
	rec.actor(name, "etl")
	return e, nil
}

// connect makes the session's client: a new producer of the same
// transactional id (its InitProducerId fences the previous one and aborts
// its open transaction) and a new member of the group.
func (e *etl) connect() error {
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(e.seeds...),
		kgo.TransactionalID(etlTxnID), kgo.TransactionTimeout(15*time.Second),
		kgo.ConsumerGroup(etlGroup), kgo.ConsumeTopics(e.in.name),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.SessionTimeout(10*time.Second), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.RecordDeliveryTimeout(e.delivery), kgo.ProduceRequestTimeout(5*time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 200 * time.Millisecond }),
		kgo.MetadataMinAge(200*time.Millisecond))
	if err != nil {
		return err
	}
	e.sess = sess
	return nil
}

// run reads, writes and commits one transaction per poll until ctx ends.
func (e *etl) run(ctx context.Context) {
	defer close(e.done)
	defer func() { e.sess.Close() }()
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := e.sess.PollFetches(pctx)
		cancel()
		var rs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { rs = append(rs, r) })
		if len(rs) == 0 {
			continue
		}
		if err := e.sess.Begin(); err != nil {
			e.rec.logf("etl: begin: %v; replacing the session", err)
			e.sess.Close()
			e.restarts.Add(1)
			if cerr := e.connect(); cerr != nil {
				e.rec.logf("etl: reconnecting: %v", cerr)
				return
			}
			continue
		}
		now := e.rec.since()
		reads := make([]Read, 0, len(rs))
		// A record that fails (its delivery timeout passed while the
		// producer id or the partition could not be had from the
		// transaction coordinator) is in no partition of the transaction,
		// and End(TryCommit) would still commit the consumed offsets:
		// franz-go leaves it to the caller to abort, as its EOS example
		// does with this promise.
		failed := kgo.AbortingFirstErrPromise(e.sess.Client())
		for _, r := range rs {
			reads = append(reads, Read{TP: TP{r.Topic, r.Partition}, Rec: Rec{Offset: r.Offset, Value: string(r.Value)}, Consumer: e.name, At: now})
			e.sess.Produce(ctx, &kgo.Record{Topic: e.out.name, Partition: r.Partition,
				Value: []byte(ETLValue(r.Partition, r.Offset, string(r.Value)))}, failed.Promise())
		}
		try := kgo.TryCommit
		if perr := failed.Err(); perr != nil {
			if n := e.produceFailed.Add(1); n <= 5 || n%100 == 0 {
				e.rec.logf("etl: an output of transaction %d failed, aborting it: %v", e.commits.Load()+e.aborts.Load()+1, perr)
			}
			try = kgo.TryAbort
		}
		ectx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		committed, err := e.sess.End(ectx, try)
		cancel()
		if committed && err == nil {
			e.commits.Add(1)
			e.rec.reads(e.name, reads)
		} else if n := e.aborts.Add(1); n <= 5 || n%100 == 0 {
			e.rec.logf("etl: transaction %d aborted (committed %v): %v", n, committed, err)
		}
		if err != nil {
			// franz-go: no error of End is retryable; the session must be
			// replaced, as a stream processor restarts its task.
			e.sess.Close()
			e.restarts.Add(1)
			if cerr := e.connect(); cerr != nil {
				e.rec.logf("etl: reconnecting: %v", cerr)
				return
			}
		}
	}
}

// committedOffsets is the group's committed offset per input partition,
// read as stable (no transaction of the group's pending), -1 for none.
func committedOffsets(ctx context.Context, adm *kadm.Client, in topicSpec) (map[int32]int64, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := adm.FetchOffsetsForTopics(cctx, etlGroup, in.name)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for p := range in.parts {
		out[p] = -1
		if o, ok := resp.Lookup(in.name, p); ok && o.Err == nil {
			out[p] = o.At
		}
	}
	return out, nil
}

// readCommitted reads tp read_committed from its log start to its last
// stable offset: holes (markers, aborted records) are expected, so it stops
// once it has seen the last record below the LSO, or after quiet polls.
func readCommitted(ctx context.Context, seeds []string, adm *kadm.Client, t topicSpec) []FinalRead {
	return readToEnd(ctx, adm, t, adm.ListCommittedOffsets, func(tp TP, from, end int64) ([]Rec, error) {
		return readCommittedPartition(ctx, seeds, tp, from, end)
	})
}

func readCommittedPartition(ctx context.Context, seeds []string, tp TP, from, end int64) ([]Rec, error) {
	if end <= from {
		return nil, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{tp.Topic: {tp.Partition: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var recs []Rec
	quiet := 0
	for quiet < 6 { // 6 polls of up to 500 ms with nothing: the rest are markers or aborted
		pctx, pcancel := context.WithTimeout(rctx, time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		if rctx.Err() != nil {
			return recs, fmt.Errorf("read_committed read of [%d,%d) did not finish before the deadline", from, end)
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < end {
				recs = append(recs, Rec{Offset: r.Offset, Key: string(r.Key), Value: string(r.Value)})
				n++
			}
		})
		if n == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if len(recs) > 0 && recs[len(recs)-1].Offset == end-1 {
			break
		}
	}
	return recs, nil
}

// drainETL waits (at most 60 s) until the group's committed offsets reach
// ends, the input's end offsets after the producers stopped, then stops the
// workload and reads the final committed offsets.
func drainETL(ctx context.Context, e *etl, adm *kadm.Client, ends map[int32]int64, stop func()) *ETLHistory {
	h := &ETLHistory{Input: e.in.name, Output: e.out.name, Group: etlGroup}
	h.Drained = poll(60*time.Second, 500*time.Millisecond, func() bool {
		c, err := committedOffsets(ctx, adm, e.in)
		if err != nil {
			return false
		}
		for p, end := range ends {
			if c[p] < end {
				return false
			}
		}
		return true
	})
	stop()
	<-e.done
	h.Commits, h.Aborts, h.Restarts, h.ProduceFailed = e.commits.Load(), e.aborts.Load(), e.restarts.Load(), e.produceFailed.Load()
	c, err := committedOffsets(ctx, adm, e.in)
	if err != nil {
		h.Err = fmt.Sprintf("committed offsets after the run: %v", err)
	}
	h.Committed = c
	return h
}
