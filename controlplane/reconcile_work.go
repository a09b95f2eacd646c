package controlplane

import (
	"sync"
	"time"
)

// reconcileFullInterval is ControllerConfig.ReconcileInterval's default:
// how often the controller reconciles every partition when no event asked
// it to, the safety net for inputs that
// publish no event (a broker-level default of min.insync.replicas or
// unclean.leader.election.enable changed dynamically). Everything that
// does publish one (a broker registering, expiring or changing its
// report, a topic created or changed, a partition's state) is reconciled
// at once, from the events (reconcileWork). A due pass whose inputs are
// those of the last one that changed nothing passes over the partitions
// (Controller.quiet).
const reconcileFullInterval = 30 * time.Second

// reconcileWorkMax bounds the partitions reconcileWork remembers: past it
// the next pass visits every partition, which costs no more than visiting
// that many one by one.
const reconcileWorkMax = 4096

// reconcileWork is what the controller's next reconcile pass must visit,
// fed by the Store's events: the partitions whose state changed, or every
// partition after a change that can move any of them (a broker came or
// went, a topic appeared or changed its configs). An idle cluster thus
// costs the controller no per-partition work between full passes
// (TestControllerIdleVisitsNoPartition). Safe for concurrent use: the
// event goroutine marks, the controller's loop takes.
type reconcileWork struct {
	mu struct {
		sync.Mutex
		all   bool
		parts map[PartitionKey]struct{}
	}
}

// observe marks what ev asks the controller to look at again, and reports
// whether it asked anything.
func (w *reconcileWork) observe(ev Event) bool {
	switch ev.Kind {
	case BrokerUp, BrokerDown, TopicCreated, TopicChanged:
		w.markAll()
	case PartitionChanged:
		w.mark(PartitionKey{ev.Partition.Topic, ev.Partition.Partition})
	default:
		return false
	}
	return true
}

func (w *reconcileWork) markAll() {
	w.mu.Lock()
	w.mu.all, w.mu.parts = true, nil
	w.mu.Unlock()
}

func (w *reconcileWork) mark(k PartitionKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.all {
		return
	}
	if len(w.mu.parts) >= reconcileWorkMax {
		w.mu.all, w.mu.parts = true, nil
		return
	}
	if w.mu.parts == nil {
		w.mu.parts = map[PartitionKey]struct{}{}
	}
	w.mu.parts[k] = struct{}{}
}

// take returns what was marked since the last take and forgets it: all
// when every partition is to be visited, else the partitions marked (the
// caller owns the map; nil when none).
func (w *reconcileWork) take() (all bool, parts map[PartitionKey]struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	all, parts = w.mu.all, w.mu.parts
	w.mu.all, w.mu.parts = false, nil
	return all, parts
}
