package replica_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/replica"
)

// TestNoLeadingFromThePreviousProcessRecord: a partition record that names
// this node leader but carries the incarnation of its previous process
// (the controller stamped it while that process led) is not led from: the
// epoch's log may be one this process lacks. Chaos run mixed seed 318: a
// node wiped and restarted within its old session took the role of its
// previous process at epoch 18 on an empty log, appended there, and a
// follower still in epoch 18 truncated 2449 committed records to the
// wiped node's epoch-18 end. Before the check the replica led at once.
func TestNoLeadingFromThePreviousProcessRecord(t *testing.T) {
	dir := t.TempDir()
	ctx := proctest.Context(t, 60*time.Second)
	st := natsStore(t, ctx, dir, 2)
	if _, err := st.CreateTopic(ctx, "wiped", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	ps, ok := st.Partition("wiped", 0)
	if !ok {
		t.Fatal("no partition state after CreateTopic")
	}
	ps.Replicas, ps.ISR, ps.Leader, ps.LeaderEpoch = []int32{2}, []int32{2}, 2, 18
	ps.LeaderIncarnation = "the-previous-process"
	ps, err := st.UpdatePartition(ctx, ps)
	if err != nil {
		t.Fatal(err)
	}

	m := replica.New(managerConfig(2, st.OwnIncarnation(), filepath.Join(dir, "n2", "logs")), st)
	runManager(t, m)
	rep, ok := m.Local("wiped", 0)
	if !ok {
		t.Fatal("wiped-0 not open")
	}
	if rep.IsLeader() {
		t.Fatal("leads at epoch 18 from a record stamped with the previous process's incarnation")
	}
	if _, err := m.Leader("wiped", 0); err == nil {
		t.Fatal("Leader returns the replica of a record of the previous process")
	}

	// The controller fences the re-registered leader with a new epoch and
	// stamps this process's incarnation: now it leads.
	ps.LeaderEpoch, ps.LeaderIncarnation = 19, st.OwnIncarnation()
	if _, err := st.UpdatePartition(ctx, ps); err != nil {
		t.Fatal(err)
	}
	if err := proctest.WaitFor(10*time.Second, func() bool { return rep.IsLeader() && rep.LeaderEpoch() == 19 }); err != nil {
		t.Fatalf("not leader at epoch 19 with its own incarnation: leader %v epoch %d", rep.IsLeader(), rep.LeaderEpoch())
	}
}
