package replica

import (
	"context"
	"slices"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
)

// isrLoop is the leader's side of ISR management: every interval it asks
// each local leader replica which followers should leave (lagging past
// replica.lag.time.max.ms) or join (caught up) the ISR, and commits the
// change to the control plane by compare-and-set before it counts.
func (r *Manager) isrLoop(ctx context.Context) {
	lag := r.lagMax
	t := time.NewTicker(max(lag/4, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
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
			isr := slices.DeleteFunc(slices.Clone(st.ISR), func(b int32) bool { return slices.Contains(ch.Shrink, b) })
			for _, b := range ch.Expand {
				if !slices.Contains(isr, b) {
					isr = append(isr, b)
				}
			}
			if len(isr) == 0 || slices.Equal(isr, st.ISR) {
				continue
			}
			st = controlplane.ChangeISR(st, isr, int(rep.Config().Int64(config.MinInsyncReplicas)))
			uctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := r.store.UpdatePartition(uctx, st)
			cancel()
			if err != nil {
				r.logger.Debug("ISR change not committed", "topic", rep.Topic(), "partition", rep.Partition(), "err", err)
				continue
			}
			r.logger.Info("ISR changed", "topic", rep.Topic(), "partition", rep.Partition(), "isr", isr,
				"shrink", ch.Shrink, "expand", ch.Expand)
			if r.onISR != nil {
				r.onISR(len(ch.Shrink) > 0, len(ch.Expand) > 0)
			}
			r.reconcileSoon()
		}
	}
}
