package replica

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/partition"
)

// isrSoon queues an ISR check (partition.Options.OnISRExpandable: a
// follower fetch reached the high watermark); it never blocks.
func (r *Manager) isrSoon() {
	select {
	case r.isrCh <- struct{}{}:
	default:
	}
}

// isrCommitParallelism bounds the ISR changes one pass of isrLoop has in
// flight to the control plane at once. Each is a compare-and-set of its own
// partition record, a round trip to NATS: one after another, a node that
// leads 500 partitions took 10-15 s to re-admit a restarted follower to
// all of them (issue 23). Kafka sends them in one AlterPartition request.
const isrCommitParallelism = 32

// isrLoop is the leader's side of ISR management: every half of
// replica.lag.time.max.ms (Kafka's isr-expiration period: a follower is
// dropped between one and one and a half lag times after it fell behind;
// at 10,000 partitions each pass visits a node's 3,333 leaders, 0.1% of a
// core at a quarter), and as soon as a follower outside the ISR has
// caught up (isrSoon, as Kafka expands the ISR at the fetch that reaches
// the high watermark), it asks each local leader replica which followers
// should leave (lagging past replica.lag.time.max.ms) or join (caught up)
// the ISR, and commits the changes to the control plane by compare-and-set,
// up to isrCommitParallelism at once, the pass ending when every answer is
// in. The replica counts the proposal in its high watermark from before the
// write until its answer (partition's maximal ISR: BeginISRChange,
// EndISRChange), and installs a committed ISR at once.
func (r *Manager) isrLoop(ctx context.Context) {
	lag := r.lagMax
	t := time.NewTicker(max(lag/2, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.isrCh:
		}
		r.isrPass(ctx, time.Now(), lag)
	}
}

// isrPass proposes and commits the ISR changes of every local leader once.
func (r *Manager) isrPass(ctx context.Context, now time.Time, lag time.Duration) {
	var live map[int32]bool
	sem := make(chan struct{}, isrCommitParallelism)
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, rep := range r.All() {
		if !rep.IsLeader() {
			continue
		}
		ch := rep.ProposeISRChange(now, lag)
		if len(ch.Shrink) == 0 && len(ch.Expand) == 0 {
			continue
		}
		st, ok := r.store.Partition(rep.Topic(), rep.Partition())
		if !ok || st.Leader != r.nodeID || st.LeaderEpoch != rep.LeaderEpoch() {
			continue // fenced: the control plane has moved on
		}
		if live == nil {
			live = map[int32]bool{}
			for _, b := range r.store.Brokers() {
				live[b.NodeID] = true
			}
		}
		next, ok := proposeISR(st, ch, func(b int32) bool { return live[b] }, int(rep.Config().Int64(config.MinInsyncReplicas)))
		if !ok {
			continue
		}
		if !rep.BeginISRChange(next.LeaderEpoch, next.ISR, next.PartitionEpoch) {
			continue // the role moved on, or a change is pending
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			rep.EndISRChange(false, nil, -1) // never sent
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r.commitISR(ctx, rep, next, ch)
		}()
	}
}

// commitISR writes one proposed partition record (st, for the change ch)
// and ends the replica's pending ISR change with the answer.
func (r *Manager) commitISR(ctx context.Context, rep *partition.Replica, st controlplane.PartitionState, ch partition.ISRChange) {
	uctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	written, err := r.store.UpdatePartition(uctx, st)
	cancel()
	switch {
	case err == nil:
		rep.EndISRChange(true, written.ISR, written.PartitionEpoch)
	case errors.Is(err, controlplane.ErrConflict):
		rep.EndISRChange(false, nil, -1) // refused: the record had moved on
	default:
		// The answer is lost: the write may have committed. The
		// proposal keeps counting until a newer record is applied
		// (partition.Replica.BeginISRChange).
		r.reconcilePartitionSoon(replicaKey{rep.Topic(), rep.Partition()})
	}
	if err != nil {
		r.logger.Debug("ISR change not committed", "topic", rep.Topic(), "partition", rep.Partition(), "err", err)
		return
	}
	r.logger.Info("ISR changed", "topic", rep.Topic(), "partition", rep.Partition(), "isr", st.ISR,
		"shrink", ch.Shrink, "expand", ch.Expand)
	if r.onISR != nil {
		r.onISR(len(ch.Shrink) > 0, len(ch.Expand) > 0)
	}
	r.reconcilePartitionSoon(replicaKey{rep.Topic(), rep.Partition()})
}

// proposeISR is the record the leader proposes for the change ch to the
// partition record st: the shrunk members out, the caught-up followers in,
// with KIP-966's ELR rule (controlplane.ChangeISR). A follower whose broker
// is not live (live: registered, with a session) is not re-admitted, as
// Kafka's controller refuses a fenced replica in the ISR (KIP-841): its
// last fetch may be within replica.lag.time.max.ms of a kill, and
// re-admitting it after the controller took it out puts a dead node back
// among the leader's candidates, out of the ELR (issue 22). false when
// nothing changes.
func proposeISR(st controlplane.PartitionState, ch partition.ISRChange, live func(int32) bool, minISR int) (controlplane.PartitionState, bool) {
	isr := slices.DeleteFunc(slices.Clone(st.ISR), func(b int32) bool { return slices.Contains(ch.Shrink, b) })
	for _, b := range ch.Expand {
		if live(b) && !slices.Contains(isr, b) {
			isr = append(isr, b)
		}
	}
	if len(isr) == 0 || slices.Equal(isr, st.ISR) {
		return st, false
	}
	return controlplane.ChangeISR(st, isr, minISR), true
}
