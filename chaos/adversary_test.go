package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
)

// TestCheckerFlagsAdversaryAndStuckLSO: the checker reports each
// acknowledged adversarial request and each partition whose last stable
// offset stayed below its high watermark.
func TestCheckerFlagsAdversaryAndStuckLSO(t *testing.T) {
	h := &History{ETL: &ETLHistory{Drained: true, Committed: map[int32]int64{},
		Adversary: &AdversaryHistory{AcceptedTotal: 2, Accepted: []string{"no-txn-id/made-up-pid: Produce v11 ..."}},
		Stable: []StableOffset{
			{TP: TP{"etl-out", 0}, LSO: 7, HW: 7},
			{TP: TP{"etl-out", 1}, LSO: 3, HW: 9},
			{TP: TP{"__consumer_offsets", 4}, LSO: -1, HW: -1, Err: "list offsets: timeout"},
		}}}
	r := Result{Counts: map[Kind]int{}}
	checkETL(&r, h, map[TP]*finalIndex{})
	if r.Counts[AdversaryAccepted] != 2 || r.Counts[LSOStuck] != 2 || r.Total() != 4 {
		t.Fatalf("counts %v, want 2 ADVERSARY-ACCEPTED and 2 LSO-STUCK: %v", r.Counts, r.Violations)
	}
}

// TestAdversaryIsRefused runs the transactional pipeline with the
// adversarial producer beside it on one `shale serve` process, and checks
// what the chaos checker checks: no adversarial request acknowledged,
// every partition's last stable offset at its high watermark afterwards,
// the pipeline's exactly-once. Against the binary before issue 22's fixes
// the made-up producer's batch without a transactional id was acknowledged
// and held the last stable offset of its partition.
func TestAdversaryIsRefused(t *testing.T) {
	one := startOneNode(t, "adversary node", topicSpec{name: "chaos", parts: 2})
	seeds, ctx, cl, adm, in := one.seeds, one.ctx, one.cl, one.adm, one.in
	const total = 40
	var rs []*kgo.Record
	for i := range total {
		rs = append(rs, &kgo.Record{Topic: in.name, Partition: int32(i % 2), Value: fmt.Appendf(nil, "v%d", i)})
	}

	rec := newRecorder(testWriter{t})
	e, err := newETL("etl", seeds, in, rec, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	adv, err := newAdversary(seeds, in, rec, 1)
	if err != nil {
		t.Fatal(err)
	}
	ectx, stopETL := context.WithCancel(ctx)
	actx, stopAdv := context.WithCancel(ctx)
	defer func() { stopETL(); stopAdv(); <-e.done; <-adv.done }()
	go e.run(ectx)
	go adv.run(actx)
	// Inputs in two halves, so that the pipeline runs several
	// transactions while the adversary sends.
	for half := range 2 {
		if err := cl.ProduceSync(ctx, rs[half*total/2:(half+1)*total/2]...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := proctest.WaitFor(60*time.Second, func() bool { return e.commits.Load() > int64(half) }); err != nil {
			t.Fatalf("the pipeline committed no transaction of half %d: %v", half, err)
		}
	}
	// Every kind sent at least once (the stale epoch needs the pipeline
	// past its first epoch).
	kinds := []string{"no-txn-id/made-up-pid", "no-txn-id/pipeline-pid-newer-epoch", "pipeline-txn-id/stale-epoch", "txn-offset-commit/made-up-pid"}
	if err := proctest.WaitFor(60*time.Second, func() bool {
		adv.mu.Lock()
		defer adv.mu.Unlock()
		for _, k := range kinds {
			if adv.h.Refused[k]+adv.h.AcceptedTotal == 0 {
				return false
			}
		}
		return true
	}); err != nil {
		h := adv.history()
		t.Fatalf("the adversary did not get an answer of every kind: sent %v, refused %v, acknowledged %v", h.Sent, h.Refused, h.Accepted)
	}
	stopAdv()
	<-adv.done

	h := &History{Compacted: []string{}}
	h.ETL = drainETL(ctx, e, adm, map[int32]int64{0: total / 2, 1: total / 2}, stopETL)
	h.ETL.Adversary = adv.history()
	h.ETL.Stable = stableOffsets(ctx, adm, []topicSpec{in, e.out}, 60*time.Second)
	h.ETL.Outputs = readCommitted(ctx, seeds, adm, e.out)
	h.Final = readCommitted(ctx, seeds, adm, in)
	t.Logf("adversary: sent %v, refused with %v", h.ETL.Adversary.Sent, h.ETL.Adversary.Codes)
	r := Result{Counts: map[Kind]int{}}
	finals := map[TP]*finalIndex{}
	for i := range h.Final {
		finals[h.Final[i].TP] = indexFinal(&h.Final[i])
	}
	checkETL(&r, h, finals)
	for _, v := range r.Violations {
		t.Error(v)
	}
}
