package clustertest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
)

// maxFilesPerPartition bounds the descriptors a node holds per partition:
// one for its active segment's .log (the indexes are mapped and their files
// closed), with room for what a node opens besides.
const maxFilesPerPartition = 1.2

// nodeOpenFiles counts the descriptors open in node n's process.
func nodeOpenFiles(tb testing.TB, n *proctest.Node) int {
	tb.Helper()
	cmd := n.Cmd()
	if cmd == nil || cmd.Process == nil {
		tb.Fatal("node not running")
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid))
	if err != nil {
		tb.Fatal(err)
	}
	return len(ents)
}

// TestNodeFilesPerPartition: three nodes each holding every replica of a
// 300-partition RF=3 topic open at most maxFilesPerPartition descriptors
// per partition (issue 23: three, the .log, .index and .timeindex of each
// active segment, so 10,000 partitions could not open under a 20,000 fd
// limit). A count, not a time. Then one high watermark checkpoint per
// node lists every partition, and no partition directory holds its own.
func TestNodeFilesPerPartition(t *testing.T) {
	const parts = 300
	c := proctest.StartCluster(t, shaleBin, []int32{1, 2, 3}, proctest.ClusterName("files per partition"))
	ctx := proctest.Context(t, 3*time.Minute)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Node(1).Kafka()), kgo.MetadataMinAge(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.Metadata(ctx); err != nil {
		t.Fatal(err)
	}
	before := map[int32]int{}
	for _, id := range c.IDs() {
		before[id] = nodeOpenFiles(t, c.Node(id))
	}
	resp, err := adm.CreateTopic(ctx, parts, 3, nil, "files")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	var last string
	if err := proctest.Poll(2*time.Minute, 50*time.Millisecond, func() bool {
		md, err := adm.Metadata(ctx, "files")
		if err != nil {
			last = err.Error()
			return false
		}
		full := 0
		for _, pd := range md.Topics["files"].Partitions {
			if pd.Err == nil && pd.Leader >= 0 && len(pd.ISR) == 3 {
				full++
			}
		}
		last = fmt.Sprintf("%d of %d led with a full ISR", full, parts)
		return full == parts
	}); err != nil {
		t.Fatalf("%v (%s)", err, last)
	}
	for _, id := range c.IDs() {
		n := nodeOpenFiles(t, c.Node(id))
		per := float64(n-before[id]) / parts
		t.Logf("node %d: %d fds before the topic, %d with it: %.2f per partition", id, before[id], n, per)
		if per > maxFilesPerPartition {
			t.Errorf("node %d holds %.2f fds per partition (%d more for %d partitions), want <= %.1f",
				id, per, n-before[id], parts, maxFilesPerPartition)
		}
	}

	// One high watermark checkpoint per node, not one per partition: a
	// record in every partition, then each node's log dir file lists all
	// of them at high watermark 1 and no partition directory holds one.
	var recs []*kgo.Record
	for p := range int32(parts) {
		recs = append(recs, &kgo.Record{Topic: "files", Partition: p, Value: []byte("v")})
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(c.Node(1).Kafka()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, id := range c.IDs() {
		logs := filepath.Join(c.Node(id).DataDir(), "logs")
		if err := proctest.Poll(30*time.Second, 200*time.Millisecond, func() bool {
			b, err := os.ReadFile(filepath.Join(logs, "replication-offset-checkpoint"))
			last = fmt.Sprintf("%v", err)
			if err != nil {
				return false
			}
			at1 := 0
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) == 4 && f[0] == "files" && f[2] == "1" {
					at1++
				}
			}
			last = fmt.Sprintf("%d of %d partitions at high watermark 1", at1, parts)
			return at1 == parts
		}); err != nil {
			t.Fatalf("node %d: the log dir's high watermark checkpoint: %v (%s)", id, err, last)
		}
		per, _ := filepath.Glob(filepath.Join(logs, "files-*", "replication-offset-checkpoint"))
		if len(per) != 0 {
			t.Fatalf("node %d: %d partition directories hold a checkpoint of their own, e.g. %s", id, len(per), per[0])
		}
	}
	c.CheckNoPanic()
}
