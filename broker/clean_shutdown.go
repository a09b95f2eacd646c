package broker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/shale-io/shale/controlplane"
)

// The node's clean-shutdown record and its replica log reports, for leader
// eligibility after an unclean restart (KIP-966; controlplane/eligibility.go).
//
// A node that stops cleanly writes CleanShutdownFile in its data dir once
// every replica is flushed and closed. At start the node reads and removes
// it: without it (killed, crashed, or a new disk) the node registers with
// UncleanStart and, once its replicas are open, reports the log end of each
// local replica it is a leader candidate of (ISR or ELR). The controller
// trusts it with those partitions only through that report. An entry is
// dropped once the node is back in the partition's ISR under a leader, by
// the leader's catch-up rule.

// CleanShutdownFile is the clean-shutdown record's name in the data dir.
const CleanShutdownFile = "clean_shutdown"

// takeCleanShutdown reports whether dir holds the clean-shutdown record,
// and removes it (durably) so that a crash of this run is seen as unclean.
func takeCleanShutdown(dir string) (bool, error) {
	p := filepath.Join(dir, CleanShutdownFile)
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if err := os.Remove(p); err != nil {
		return false, err
	}
	return true, syncDir(dir)
}

// writeCleanShutdown records a clean stop in dir, durably.
func writeCleanShutdown(dir string) error {
	p := filepath.Join(dir, CleanShutdownFile)
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	if _, err := f.WriteString("clean shutdown\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// logReports holds the report of an uncleanly started node.
type logReports struct {
	mu      sync.Mutex
	active  bool // the node started uncleanly
	made    bool // the first report was published
	reports []controlplane.ReplicaLog
	// out is, per partition, the latest partition epoch at which this node
	// saw a record without itself in the ISR (from the store's events, so
	// that a removal the leader undoes at once is not missed).
	out map[tpKey]int32
}

type tpKey struct {
	id        controlplane.TopicID
	partition int32
}

// sawOut records st if it leaves this node out of the ISR.
func (r *logReports) sawOut(st controlplane.PartitionState, self int32) {
	if slices.Contains(st.ISR, self) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := tpKey{st.TopicID, st.Partition}
	if r.out == nil {
		r.out = map[tpKey]int32{}
	}
	if st.PartitionEpoch > r.out[k] {
		r.out[k] = st.PartitionEpoch
	}
}

// candidateLogs returns the log ends of the local replicas this node is a
// leader candidate of, at the partition records it sees now.
func (n *Node) candidateLogs() []controlplane.ReplicaLog {
	var out []controlplane.ReplicaLog
	for _, rep := range n.replicas.All() {
		st, ok := n.store.Partition(rep.Topic(), rep.Partition())
		if !ok || !(slices.Contains(st.ISR, n.cfg.NodeID) || slices.Contains(st.ELR, n.cfg.NodeID)) {
			continue
		}
		last := int32(-1)
		if es := rep.Log().Epochs(); len(es) > 0 {
			last = es[len(es)-1].Epoch
		}
		out = append(out, controlplane.ReplicaLog{TopicID: st.TopicID, Partition: st.Partition,
			LeaderEpoch: st.LeaderEpoch, PartitionEpoch: st.PartitionEpoch,
			LastEpoch: last, LogEnd: rep.Log().LogEndOffset(), InISR: slices.Contains(st.ISR, n.cfg.NodeID),
			NewDisk: n.replicas.NewDir(rep.Topic(), rep.Partition())})
	}
	return out
}

// refreshLogReports publishes the first report after the replicas are open
// (first), and later drops the entries of partitions this node has rejoined
// (ReplicaLog.Rejoined). An entry made in the ISR moves on to the record
// that took the node out of it, once seen, so that the leader's re-admission
// after that counts.
func (n *Node) refreshLogReports(first bool) {
	r := &n.logReports
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.active {
		return
	}
	if !r.made {
		first = true // the first report failed: make it again
	}
	var next []controlplane.ReplicaLog
	if first {
		next = n.candidateLogs()
	} else {
		for _, l := range r.reports {
			t, ok := n.store.TopicByID(l.TopicID)
			if !ok {
				continue
			}
			st, ok := n.store.Partition(t.Name, l.Partition)
			if !ok {
				continue
			}
			e := r.out[tpKey{l.TopicID, l.Partition}]
			if !slices.Contains(st.ISR, n.cfg.NodeID) {
				e = max(e, st.PartitionEpoch)
			}
			if l.InISR && e > l.PartitionEpoch {
				l.InISR, l.PartitionEpoch = false, e
			}
			if l.Rejoined(st, n.cfg.NodeID) {
				continue
			}
			next = append(next, l)
		}
		if slices.Equal(next, r.reports) {
			return
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.store.ReportReplicaLogs(ctx, next); err != nil {
		n.logger.Warn("reporting replica log ends", "err", err)
		return
	}
	// A fresh node (or one that leads nothing it could be trusted with)
	// reports no partition: that is no news worth a line.
	if len(next) > 0 && (first || len(next) != len(r.reports)) {
		n.logger.Info("reported replica log ends after an unclean start", "partitions", len(next))
	}
	r.reports, r.made = next, true
}

// logReportLoop drops entries from the report as the node rejoins ISRs
// (refreshLogReports), on every partition change, until ctx ends. It
// returns at once on a node that started cleanly.
func (n *Node) logReportLoop(ctx context.Context) {
	n.logReports.mu.Lock()
	active := n.logReports.active
	n.logReports.mu.Unlock()
	if !active {
		return
	}
	changed := make(chan struct{}, 1)
	unsubscribe := n.store.Subscribe(func(ev controlplane.Event) {
		if ev.Kind == controlplane.PartitionChanged {
			n.logReports.sawOut(ev.Partition, n.cfg.NodeID)
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	})
	defer unsubscribe()
	t := time.NewTicker(n.cfg.BrokerSessionTimeout)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-t.C: // a missed event, or a failed report to make again
		}
		n.refreshLogReports(false)
	}
}
