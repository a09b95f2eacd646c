package controlplane

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestControllerFailover: three nodes on one NATS, one controller at a time;
// when the leader of a partition dies the controller elects another from the
// ISR with a bumped epoch; when the controller dies another takes over.
func TestControllerFailover(t *testing.T) {
	srv := startNATS(t)
	cfg := StoreConfig{BrokerTTL: time.Second, KeepaliveInterval: 300 * time.Millisecond, Logger: quietLogger()}
	var stores []*Store
	var ctrls []*Controller
	for id := int32(1); id <= 3; id++ {
		s := openStore(t, connect(t, srv), cfg)
		if err := s.RegisterBroker(testCtx(t), broker(id)); err != nil {
			t.Fatal(err)
		}
		c, err := StartController(testCtx(t), s, ControllerConfig{NodeID: id, LeaseTTL: time.Second, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		stores, ctrls = append(stores, s), append(ctrls, c)
	}
	t.Cleanup(func() {
		for _, c := range ctrls {
			c.Close()
		}
	})
	leaders := func() (n int, id int32) {
		for i, c := range ctrls {
			if c.IsController() {
				n++
				id = int32(i + 1)
			}
		}
		return
	}
	eventually(t, 10*time.Second, "one controller", func() bool { n, _ := leaders(); return n == 1 })
	_, ctrlID := leaders()
	eventually(t, 10*time.Second, "every node knows the controller", func() bool {
		for _, c := range ctrls {
			if c.ID() != ctrlID {
				return false
			}
		}
		return true
	})

	if _, err := stores[0].CreateTopic(testCtx(t), "ha", 6, 3, nil); err != nil {
		t.Fatal(err)
	}
	// Kill a broker that is neither the controller: stop its keepalive by
	// closing its store, as a crashed process would.
	victim := int32(1)
	if victim == ctrlID {
		victim = 2
	}
	// The controller's cache has the topic a moment after the creation on
	// node 1: a snapshot taken before that missed partitions, which then
	// read as led by node 0 at epoch 0.
	eventually(t, 10*time.Second, "the controller's cache has every partition", func() bool {
		sts := stores[ctrlID-1].Partitions("ha")
		return len(sts) == 6 && !slices.ContainsFunc(sts, func(st PartitionState) bool { return st.Leader <= 0 })
	})
	before := map[int32]PartitionState{}
	for _, st := range stores[ctrlID-1].Partitions("ha") {
		before[st.Partition] = st
	}
	ctrls[victim-1].Close()
	stores[victim-1].Close()
	observer := stores[ctrlID-1]
	eventually(t, 15*time.Second, "leadership moved off the dead broker", func() bool {
		for _, st := range observer.Partitions("ha") {
			if st.Leader == victim || st.Leader < 0 {
				return false
			}
			for _, m := range st.ISR {
				if m == victim {
					return false
				}
			}
		}
		return true
	})
	for _, st := range observer.Partitions("ha") {
		old := before[st.Partition]
		if old.Leader == victim && st.ControllerEpoch == 0 {
			t.Fatalf("partition %d: the controller's election carries no controller epoch", st.Partition)
		}
		if old.Leader == victim && st.LeaderEpoch != old.LeaderEpoch+1 {
			t.Fatalf("partition %d: epoch %d -> %d, want one bump per election", st.Partition, old.LeaderEpoch, st.LeaderEpoch)
		}
		if old.Leader != victim && st.LeaderEpoch != old.LeaderEpoch {
			t.Fatalf("partition %d: leader %d kept, yet epoch moved %d -> %d", st.Partition, old.Leader, old.LeaderEpoch, st.LeaderEpoch)
		}
	}
	// Kill the controller: the remaining node takes over.
	ctrls[ctrlID-1].Close()
	survivor := int32(6) - victim - ctrlID
	eventually(t, 15*time.Second, "the survivor became controller", func() bool { return ctrls[survivor-1].IsController() })
}

func TestFenceController(t *testing.T) {
	st := ps(1, 3, []int32{1, 2, 3}, []int32{1, 2, 3})
	st.ControllerEpoch = 20
	next := st
	next.Leader, next.ISR = 2, []int32{2, 3}
	if _, err := FenceController(st, next, 10); !errors.Is(err, ErrControllerFenced) {
		t.Fatalf("a controller of epoch 10 over a record written at 20: %v", err)
	}
	for _, epoch := range []uint64{20, 30} {
		got, err := FenceController(st, next, epoch)
		if err != nil || got.ControllerEpoch != epoch || got.Leader != 2 {
			t.Fatalf("epoch %d: %+v %v", epoch, got, err)
		}
	}
}
