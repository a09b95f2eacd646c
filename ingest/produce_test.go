package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafkaerr"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment/batch"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// leaders serves the replicas of a map by "topic-partition".
type leaders map[string]*partition.Replica

func (l leaders) Leader(topic string, p int32) (*partition.Replica, error) {
	if r, ok := l[fmt.Sprintf("%s-%d", topic, p)]; ok {
		return r, nil
	}
	return nil, partition.ErrUnknownTopicOrPartition
}

// leaderReplica opens a replica that this node (id 1) leads alone, with the
// topic configs given.
func leaderReplica(t testing.TB, topic string, configs map[string]string) *partition.Replica {
	t.Helper()
	rep, err := partition.Open(partition.Options{Dir: t.TempDir(), Topic: topic, Partition: 0,
		Config: config.ResolveTopic(configs, nil), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rep.Close() })
	rep.SetAssignment(1, []int32{1}, []int32{1})
	rep.SetLeadership(true, 0)
	return rep
}

func records(t *testing.T, n int) []byte {
	t.Helper()
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{Value: []byte("v")}
	}
	b, err := batch.Build(nil, batch.NoProducer(), recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// produce sends one Produce v9 through the handler and returns its answer
// per "topic-partition" (after Reply.Wait, for acks=all).
func produce(t *testing.T, h *produceHandler, acks int16, txn *string, parts map[string][]byte) map[string]kmsg.ProduceResponseTopicPartition {
	t.Helper()
	return produceAt(t, h, 9, acks, txn, parts)
}

// produceAt is produce at request version v.
func produceAt(t *testing.T, h *produceHandler, v, acks int16, txn *string, parts map[string][]byte) map[string]kmsg.ProduceResponseTopicPartition {
	t.Helper()
	r := kmsg.NewPtrProduceRequest()
	r.SetVersion(v)
	r.Acks, r.TimeoutMillis, r.TransactionID = acks, 5000, txn
	for name, recs := range parts {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = name[:len(name)-len("-0")] // partition 0 only
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = 0, recs
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reply, err := h.handle(ctx, &kafka.Request{Key: r.Key(), Version: v, Msg: r})
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := reply.Response.(*kmsg.ProduceResponse)
	switch {
	case reply.NoResponse:
		return nil
	case reply.Wait != nil:
		kr, err := reply.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		resp = kr.(*kmsg.ProduceResponse)
	}
	out := map[string]kmsg.ProduceResponseTopicPartition{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out[fmt.Sprintf("%s-%d", rt.Topic, rp.Partition)] = rp
		}
	}
	return out
}

// TestProduceAnswers checks the produce path's answers, each Kafka error
// code coming from the error table at the protocol edge.
func TestProduceAnswers(t *testing.T) {
	a := leaderReplica(t, "a", nil)
	strict := leaderReplica(t, "strict", map[string]string{config.MinInsyncReplicas: "2"})
	h := &produceHandler{leaders: leaders{"a-0": a, "strict-0": strict}, log: quiet()}

	got := produce(t, h, 1, nil, map[string][]byte{"a-0": records(t, 3)})
	if p := got["a-0"]; p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("acks=1: %+v", p)
	}
	got = produce(t, h, -1, nil, map[string][]byte{"a-0": records(t, 2)})
	if p := got["a-0"]; p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("acks=all: %+v", p)
	}
	if got := produce(t, h, 0, nil, map[string][]byte{"a-0": records(t, 1)}); got != nil {
		t.Fatalf("acks=0 answered: %+v", got)
	}

	// A bad batch fails only its own partition, with its message.
	bad := records(t, 1)
	bad[len(bad)-1] ^= 0xff
	got = produce(t, h, 1, nil, map[string][]byte{"a-0": bad, "missing-0": records(t, 1)})
	if p := got["a-0"]; p.ErrorCode != kerr.CorruptMessage.Code || p.ErrorMessage == nil {
		t.Fatalf("bad CRC: %+v", p)
	}
	if p := got["missing-0"]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown partition: %+v", p)
	}

	got = produce(t, h, -1, nil, map[string][]byte{"strict-0": records(t, 1)})
	if p := got["strict-0"]; p.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all below min.insync.replicas: %+v", p)
	}
	got = produce(t, h, 2, nil, map[string][]byte{"a-0": records(t, 1)})
	if p := got["a-0"]; p.ErrorCode != kerr.InvalidRequiredAcks.Code {
		t.Fatalf("acks=2: %+v", p)
	}

	a.SetLeadership(false, 1)
	got = produce(t, h, 1, nil, map[string][]byte{"a-0": records(t, 1)})
	if p := got["a-0"]; p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("after losing leadership: %+v", p)
	}
}

// TestProduceTimeoutSaysWhatItWaitsFor: an acks=all write that its ISR does
// not replicate within timeout_ms is REQUEST_TIMED_OUT with a message naming
// the high watermark and the follower that never fetched, and the leader
// logs it, so that a stuck produce explains itself.
func TestProduceTimeoutSaysWhatItWaitsFor(t *testing.T) {
	rep := leaderReplica(t, "a", nil)
	rep.SetAssignment(1, []int32{1, 2}, []int32{1, 2})
	var logged strings.Builder
	var mu sync.Mutex
	h := &produceHandler{leaders: leaders{"a-0": rep}, log: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil))}
	r := kmsg.NewPtrProduceRequest()
	r.SetVersion(9)
	r.Acks, r.TimeoutMillis = -1, 200
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "a"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records(t, 2)
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	ctx := proctest.Context(t, 10*time.Second)
	reply, err := h.handle(ctx, &kafka.Request{Key: r.Key(), Version: 9, Msg: r})
	if err != nil || reply.Wait == nil {
		t.Fatalf("handle: %v, wait %v", err, reply.Wait != nil)
	}
	kr, err := reply.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := kr.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != kerr.RequestTimedOut.Code || p.ErrorMessage == nil {
		t.Fatalf("answer %+v, want REQUEST_TIMED_OUT with a message", p)
	}
	for _, want := range []string{"offset 1: high watermark 0, log end 2", "ISR [1 2]", "follower 2 (in the ISR): no fetch"} {
		if !strings.Contains(*p.ErrorMessage, want) {
			t.Errorf("message %q lacks %q", *p.ErrorMessage, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "acks=all produce timed out waiting for replication") ||
		!strings.Contains(logged.String(), "follower 2 (in the ISR): no fetch") {
		t.Errorf("log %q lacks the timeout", logged.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

type producerIDs struct {
	next int64
	err  error
}

func (p *producerIDs) NextProducerID(context.Context) (int64, error) {
	p.next++
	return p.next, p.err
}

func TestInitProducerID(t *testing.T) {
	ids := &producerIDs{next: 41}
	h := initProducerIDHandler(ids, nil, nil, quiet())
	call := func(r *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
		t.Helper()
		reply, err := h(context.Background(), &kafka.Request{Key: r.Key(), Version: r.Version, Msg: r})
		if err != nil {
			t.Fatal(err)
		}
		return reply.Response.(*kmsg.InitProducerIDResponse)
	}
	r := kmsg.NewPtrInitProducerIDRequest()
	r.SetVersion(4)
	if resp := call(r); resp.ErrorCode != 0 || resp.ProducerID != 42 || resp.ProducerEpoch != 0 {
		t.Fatalf("new id: %+v", resp)
	}
	r.ProducerID, r.ProducerEpoch = 42, 0
	if resp := call(r); resp.ErrorCode != 0 || resp.ProducerID != 42 || resp.ProducerEpoch != 1 {
		t.Fatalf("epoch bump (KIP-360): %+v", resp)
	}
	r.ProducerID, r.ProducerEpoch = -1, -1
	ids.err = errors.New("nats: timeout")
	if resp := call(r); resp.ErrorCode != kerr.CoordinatorNotAvailable.Code || resp.ProducerID != -1 {
		t.Fatalf("allocation failed: %+v", resp)
	}
	txn := "t"
	r.TransactionalID = &txn
	if resp := call(r); resp.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional: %+v", resp)
	}
}

// verifier records the verifications asked and answers err.
type verifier struct {
	asked []string
	err   error
}

func (v *verifier) VerifyTxn(_ context.Context, txnID string, pid int64, epoch int16, topic string, part int32, add bool) error {
	q := fmt.Sprintf("%s/%d/%d/%s-%d", txnID, pid, epoch, topic, part)
	if add {
		q += "/add"
	}
	v.asked = append(v.asked, q)
	return v.err
}

func txnRecords(t *testing.T, pid int64, epoch int16, seq int32) []byte {
	t.Helper()
	o := batch.NoProducer()
	o.ProducerID, o.ProducerEpoch, o.BaseSequence, o.Transactional = pid, epoch, seq, true
	o.FirstTimestamp = time.Now().UnixMilli()
	b, err := batch.Build(nil, o, []batch.Record{{Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProduceTransactional: transactional batches are appended; the
// verifier is asked only for the batch that opens the producer's
// transaction in the partition, and its refusal is the partition's error;
// a stale epoch and a non-transactional batch inside the transaction get
// Kafka's codes.
func TestProduceTransactional(t *testing.T) {
	a := leaderReplica(t, "a", nil)
	v := &verifier{}
	h := &produceHandler{leaders: leaders{"a-0": a}, log: quiet(), verifier: v}
	txn := "tx"

	v.err = partition.ErrInvalidTxnState // as the coordinator would refuse a partition not added
	got := produce(t, h, -1, &txn, map[string][]byte{"a-0": txnRecords(t, 5, 1, 0)})
	if p := got["a-0"]; p.ErrorCode != kerr.InvalidTxnState.Code || a.Log().LogEndOffset() != 0 {
		t.Fatalf("refused verification: %+v, log end %d", p, a.Log().LogEndOffset())
	}
	v.err = nil
	got = produce(t, h, -1, &txn, map[string][]byte{"a-0": txnRecords(t, 5, 1, 0)})
	if p := got["a-0"]; p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("first transactional batch: %+v", p)
	}
	got = produce(t, h, -1, &txn, map[string][]byte{"a-0": txnRecords(t, 5, 1, 1)})
	if p := got["a-0"]; p.ErrorCode != 0 || p.BaseOffset != 1 {
		t.Fatalf("second transactional batch: %+v", p)
	}
	if len(v.asked) != 2 || v.asked[1] != "tx/5/1/a-0" {
		t.Fatalf("verifications %v: want the refused one and the one that opened the transaction", v.asked)
	}
	if got := a.LastStableOffset(); got != 0 {
		t.Fatalf("lso %d with the transaction open", got)
	}
	got = produce(t, h, 1, &txn, map[string][]byte{"a-0": txnRecords(t, 5, 0, 2)})
	if p := got["a-0"]; p.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("stale epoch: %+v", p)
	}
	got = produce(t, h, 1, nil, map[string][]byte{"a-0": records(t, 1)})
	if p := got["a-0"]; p.ErrorCode != 0 {
		t.Fatalf("another producer's plain batch: %+v", p)
	}
	if _, err := a.AppendTxnMarker(partition.TxnMarker{ProducerID: 5, ProducerEpoch: 1, CoordinatorEpoch: 0, Commit: true}); err != nil {
		t.Fatal(err)
	}
	if got, hw := a.LastStableOffset(), a.HighWatermark(); got != hw || hw != 4 {
		t.Fatalf("lso %d hw %d after the commit, want 4", got, hw)
	}
	if _, err := a.AppendTxnMarker(partition.TxnMarker{ProducerID: 5, ProducerEpoch: 0, CoordinatorEpoch: 0}); kafkaerr.Code(err) != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("stale marker: %v (code %d)", err, kafkaerr.Code(err))
	}
	if _, err := a.AppendTxnMarker(partition.TxnMarker{ProducerID: 5, ProducerEpoch: 1, CoordinatorEpoch: -1}); kafkaerr.Code(err) != kerr.TransactionCoordinatorFenced.Code {
		t.Fatalf("stale coordinator: %v (code %d)", err, kafkaerr.Code(err))
	}
}

// TestProduceV12AddsPartition: a Produce v12 (transactions v2, KIP-890
// part 2) asks the coordinator to add the partition, not only to verify
// it, before the batch that opens the producer's transaction; a later
// transaction of the producer, at the epoch its end bumped to, is added
// again after the marker (at that epoch) closed the first.
func TestProduceV12AddsPartition(t *testing.T) {
	a := leaderReplica(t, "a", nil)
	v := &verifier{}
	h := &produceHandler{leaders: leaders{"a-0": a}, log: quiet(), verifier: v}
	txn := "tx"
	for i, want := range []int16{0, 0} {
		got := produceAt(t, h, 12, -1, &txn, map[string][]byte{"a-0": txnRecords(t, 5, 1, int32(i))})
		if p := got["a-0"]; p.ErrorCode != want {
			t.Fatalf("batch %d: %+v", i, p)
		}
	}
	// EndTxn v5 bumped the epoch to 2: its markers carry it.
	if _, err := a.AppendTxnMarker(partition.TxnMarker{ProducerID: 5, ProducerEpoch: 2, Commit: true}); err != nil {
		t.Fatal(err)
	}
	got := produceAt(t, h, 12, -1, &txn, map[string][]byte{"a-0": txnRecords(t, 5, 2, 0)})
	if p := got["a-0"]; p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("the next transaction's first batch at the bumped epoch: %+v", p)
	}
	if want := []string{"tx/5/1/a-0/add", "tx/5/2/a-0/add"}; fmt.Sprint(v.asked) != fmt.Sprint(want) {
		t.Fatalf("asked %v, want %v", v.asked, want)
	}
	// A zombie batch of the ended transaction, at the old epoch, is fenced
	// by the partition itself.
	got = produceAt(t, h, 12, -1, &txn, map[string][]byte{"a-0": txnRecords(t, 5, 1, 2)})
	if p := got["a-0"]; p.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("a batch at the epoch before the end: %+v", p)
	}
}

// racingVerifier answers yes, but the producer's transaction ends (its
// coordinator's abort marker lands, at the batch's epoch plus bump) while
// it is asked.
type racingVerifier struct {
	rep  *partition.Replica
	bump int16
}

func (v *racingVerifier) VerifyTxn(_ context.Context, _ string, pid int64, epoch int16, _ string, _ int32, _ bool) error {
	_, err := v.rep.AppendTxnMarker(partition.TxnMarker{ProducerID: pid, ProducerEpoch: epoch + v.bump})
	return err
}

// TestProduceV12VerificationGuard: with transactions v2 the marker of the
// producer's previous transaction carries the epoch of its next one's
// batches, and lands while the leader adds the next one's partition (the
// coordinator answers CONCURRENT_TRANSACTIONS until then): it does not
// void the add, while a marker at a later epoch (the end of the
// transaction being added to) does.
func TestProduceV12VerificationGuard(t *testing.T) {
	txn := "tx"
	a := leaderReplica(t, "a", nil)
	h := &produceHandler{leaders: leaders{"a-0": a}, log: quiet(), verifier: &racingVerifier{rep: a}}
	got := produceAt(t, h, 12, -1, &txn, map[string][]byte{"a-0": txnRecords(t, 5, 1, 0)})
	if p := got["a-0"]; p.ErrorCode != 0 {
		t.Fatalf("a v12 batch added across the previous transaction's marker: %+v", p)
	}
	b := leaderReplica(t, "b", nil)
	h = &produceHandler{leaders: leaders{"b-0": b}, log: quiet(), verifier: &racingVerifier{rep: b, bump: 1}}
	got = produceAt(t, h, 12, -1, &txn, map[string][]byte{"b-0": txnRecords(t, 5, 1, 0)})
	if p := got["b-0"]; p.ErrorCode != kerr.InvalidTxnState.Code && p.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("a v12 batch added across its own transaction's end: %+v", p)
	}
	for _, p := range b.Producers() {
		if p.CurrentTxnStartOffset >= 0 {
			t.Fatalf("a transaction was opened: %+v", p)
		}
	}
}

// TestProduceVerificationGuard: a transactional batch verified while its
// transaction ended (a marker between the verification and the append, as
// a timeout abort would write) is refused with INVALID_TXN_STATE instead of
// opening a transaction no coordinator knows (KIP-890's hanging
// transaction); the last stable offset is not held back.
func TestProduceVerificationGuard(t *testing.T) {
	a := leaderReplica(t, "a", nil)
	h := &produceHandler{leaders: leaders{"a-0": a}, log: quiet(), verifier: &racingVerifier{rep: a}}
	txn := "tx"
	got := produce(t, h, -1, &txn, map[string][]byte{"a-0": txnRecords(t, 5, 1, 0)})
	if p := got["a-0"]; p.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("a batch verified across a marker: %+v", p)
	}
	if lso, hw := a.LastStableOffset(), a.HighWatermark(); lso != hw || hw != 1 {
		t.Fatalf("lso %d hw %d: want both 1 (the marker only)", lso, hw)
	}
	for _, p := range a.Producers() {
		if p.CurrentTxnStartOffset >= 0 {
			t.Fatalf("a transaction was opened: %+v", p)
		}
	}
}

// TestProduceUnverifiedBatchAfterMarker: with a verifier, a batch not
// verified because its transaction was open is refused when a marker ended
// the transaction before the append (partition.NotVerified), instead of
// opening a new transaction unverified.
func TestProduceUnverifiedBatchAfterMarker(t *testing.T) {
	a := leaderReplica(t, "a", nil)
	if _, err := a.AppendLeader(txnRecords(t, 5, 1, 0)); err != nil {
		t.Fatal(err)
	}
	if !a.HasOpenTxn(5, 1) {
		t.Fatal("the transaction is not open")
	}
	if _, err := a.AppendTxnMarker(partition.TxnMarker{ProducerID: 5, ProducerEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AppendLeaderVerified(txnRecords(t, 5, 1, 1), partition.NotVerified); !errors.Is(err, partition.ErrInvalidTxnState) {
		t.Fatalf("an unverified batch after the marker: %v", err)
	}
	if a.HasOpenTxn(5, 1) || a.LastStableOffset() != a.HighWatermark() {
		t.Fatalf("a transaction was opened (lso %d hw %d)", a.LastStableOffset(), a.HighWatermark())
	}
	// Inside an open transaction the unverified guard appends as before.
	v := &verifier{}
	h := &produceHandler{leaders: leaders{"a-0": a}, log: quiet(), verifier: v}
	txn := "tx"
	if p := produce(t, h, 1, &txn, map[string][]byte{"a-0": txnRecords(t, 5, 1, 1)})["a-0"]; p.ErrorCode != 0 {
		t.Fatalf("a verified batch: %+v", p)
	}
	if p := produce(t, h, 1, &txn, map[string][]byte{"a-0": txnRecords(t, 5, 1, 2)})["a-0"]; p.ErrorCode != 0 || len(v.asked) != 1 {
		t.Fatalf("the next batch of the open transaction: %+v, %d verifications", p, len(v.asked))
	}
}
