package replica_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/replica"
	"github.com/shale-io/shale/segment/vfs"
)

// followedPartitions is every partition m's fetchers follow.
func followedPartitions(m *replica.Manager) map[string]bool {
	out := map[string]bool{}
	for _, f := range m.Fetchers() {
		for _, p := range f.Partitions {
			out[p] = true
		}
	}
	return out
}

// TestFollowersFetchWhileOthersOpen: a follower replica starts fetching
// once it is open, not once every replica of the Reconcile is: a node that
// opens thousands of new partitions (a topic's creation, a restart) had
// its first followers wait for the last to open, long enough at 10,000
// partitions for their leaders to take them out of the ISR. Here one
// partition's opening is held (its directory's creation blocks) while the
// others open: they are followed before it is released.
func TestFollowersFetchWhileOthersOpen(t *testing.T) {
	const topic, parts = "early", 16
	dir := t.TempDir()
	ctx := proctest.Context(t, 60*time.Second)
	stores := natsStores(t, ctx, dir, 1, 2)
	st2 := stores[1]
	if _, err := st2.CreateTopic(ctx, topic, parts, 1, nil); err != nil {
		t.Fatal(err)
	}
	for p := range int32(parts) {
		ps, ok := st2.Partition(topic, p)
		if !ok {
			t.Fatalf("no state of %s-%d", topic, p)
		}
		ps.Replicas, ps.ISR, ps.Leader = []int32{1, 2}, []int32{1, 2}, 1
		if _, err := st2.UpdatePartition(ctx, ps); err != nil {
			t.Fatal(err)
		}
	}
	held := filepath.Join(dir, "n2", "logs", topic+"-0")
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	cfg := managerConfig(2, "", filepath.Join(dir, "n2", "logs"))
	cfg.RecoveryThreads = 2
	cfg.FS = vfs.WithErrors(vfs.Default, func(op vfs.Op) error {
		if op.Kind == vfs.OpMkdir && strings.HasPrefix(op.Path, held) {
			<-release
		}
		return nil
	})
	m := replica.New(cfg, st2)
	done := make(chan error, 1)
	go func() { done <- m.Reconcile() }()
	t.Cleanup(func() { m.Close() })

	if err := proctest.WaitFor(20*time.Second, func() bool { return len(followedPartitions(m)) == parts-1 }); err != nil {
		t.Fatalf("while %s-0 opens: followed %v, want the other %d: %v", topic, followedPartitions(m), parts-1, err)
	}
	if f := followedPartitions(m); f[topic+"-0"] {
		t.Fatalf("%s-0 followed before it opened", topic)
	}
	once.Do(func() { close(release) })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if f := followedPartitions(m); len(f) != parts || !f[fmt.Sprintf("%s-0", topic)] {
		t.Fatalf("after the Reconcile: followed %v, want all %d", f, parts)
	}
}
