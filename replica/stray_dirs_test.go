package replica_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// A topic deleted while a node is down leaves no directory on that node once
// it is back; the topics it still holds are untouched.
func TestStrayPartitionDirsRemovedAtStart(t *testing.T) {
	root := t.TempDir()
	srv := testnode.StartNATS(t, root)
	opts := func(id int32) []testnode.Option {
		return []testnode.Option{testnode.WithNATS(srv.ClientURL()), testnode.WithNodeID(id)}
	}
	dir1 := filepath.Join(root, "node1")
	n1 := testnode.Start(t, dir1, opts(1)...)
	n2 := testnode.Start(t, filepath.Join(root, "node2"), opts(2)...)
	ctx := proctest.Context(t, 60*time.Second)
	adm := kadm.NewClient(testnode.Client(t, n2.KafkaAddr()))
	proctest.Eventually(t, 20*time.Second, "2 brokers", func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 2
	})
	for _, topic := range []string{"gone", "kept"} {
		if _, err := adm.CreateTopic(ctx, 1, 2, nil, topic); err != nil {
			t.Fatal(err)
		}
		prod := testnode.Client(t, n2.KafkaAddr(), kgo.DefaultProduceTopic(topic))
		if err := prod.ProduceSync(ctx, testnode.Records(topic, 20, topic)...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	gone, kept := filepath.Join(dir1, "logs", "gone-0"), filepath.Join(dir1, "logs", "kept-0")
	proctest.Eventually(t, 20*time.Second, "both partitions on node 1", func() bool {
		_, e1 := os.Stat(gone)
		_, e2 := os.Stat(kept)
		return e1 == nil && e2 == nil
	})
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	n1.Close(cctx)
	cancel()

	if _, err := adm.DeleteTopic(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(gone); err != nil {
		t.Fatalf("the deleted topic's directory went while node 1 was down: %v", err)
	}
	n1 = testnode.Start(t, dir1, opts(1)...)
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Fatalf("a deleted topic's directory is still there after a restart: %v", err)
	}
	if _, err := os.Stat(filepath.Join(kept, "partition.metadata")); err != nil {
		t.Fatalf("the kept topic's directory: %v", err)
	}
	got := testnode.ConsumeAll(t, n1.KafkaAddr(), "kept", 20)
	if len(got) != 20 {
		t.Fatalf("kept topic: %d records", len(got))
	}
}
