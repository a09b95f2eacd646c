package admin_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// logFileBytes sums the sizes of the .log files in a partition directory.
func logFileBytes(t *testing.T, dir string) int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		n += st.Size()
	}
	return n
}

// TestDescribeLogDirs: DescribeLogDirs (issue 26), which AKHQ, Kafka UI
// and Cruise Control call, answers through franz-go's kadm the node's one
// log dir (absolute), each partition it holds with the bytes of its .log
// files on disk and offset lag 0 (a leader), only the partitions asked
// for, and the filesystem's total and usable bytes (v4). Before the API
// was served, kadm failed (the node does not serve DescribeLogDirs).
func TestDescribeLogDirs(t *testing.T) {
	dataDir := t.TempDir()
	n := testnode.Start(t, dataDir)
	cl := testnode.Client(t, n.KafkaAddr(), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := proctest.Context(t, 90*time.Second)
	adm := kadm.NewClient(cl)
	for _, topic := range []string{"dirs-a", "dirs-b"} {
		resp, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"segment.bytes": new("8192")}, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 90 {
		r := &kgo.Record{Topic: "dirs-a", Partition: int32(i % 3), Value: fmt.Appendf(nil, "%0512d", i)}
		if i >= 45 {
			r.Topic = "dirs-b"
		}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatalf("DescribeAllLogDirs: %v", err)
	}
	dirs, ok := all[0]
	if !ok || len(all) != 1 || len(dirs) != 1 {
		t.Fatalf("answer %+v, want node 0 with one log dir", all)
	}
	wantDir, err := filepath.Abs(filepath.Join(dataDir, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	d, ok := dirs[wantDir]
	if !ok || d.Err != nil {
		t.Fatalf("log dirs %+v, want %s without error", dirs, wantDir)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(wantDir, &st); err != nil {
		t.Fatal(err)
	}
	if want := int64(st.Blocks) * int64(st.Frsize); d.TotalBytes != want {
		t.Errorf("TotalBytes %d, statfs says %d", d.TotalBytes, want)
	}
	if d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
		t.Errorf("UsableBytes %d of %d", d.UsableBytes, d.TotalBytes)
	}
	got := 0
	for topic, ps := range d.Topics {
		if topic != "dirs-a" && topic != "dirs-b" {
			continue
		}
		for p, dp := range ps {
			got++
			onDisk := logFileBytes(t, filepath.Join(wantDir, fmt.Sprintf("%s-%d", topic, p)))
			if dp.Size != onDisk || onDisk == 0 {
				t.Errorf("%s-%d: size %d, its .log files hold %d bytes", topic, p, dp.Size, onDisk)
			}
			if dp.OffsetLag != 0 || dp.IsFuture {
				t.Errorf("%s-%d: offset lag %d, future %v on the leader", topic, p, dp.OffsetLag, dp.IsFuture)
			}
		}
	}
	if got != 6 {
		t.Errorf("%d partitions described, want 6: %+v", got, d.Topics)
	}

	// Asked for two partitions (and one this node does not have), the answer has those two.
	some, err := adm.DescribeBrokerLogDirs(ctx, 0, kadm.TopicsSet{"dirs-a": {1: {}}, "dirs-b": {2: {}, 7: {}}})
	if err != nil {
		t.Fatalf("DescribeBrokerLogDirs: %v", err)
	}
	d = some[wantDir]
	if len(d.Topics) != 2 || len(d.Topics["dirs-a"]) != 1 || len(d.Topics["dirs-b"]) != 1 {
		t.Fatalf("asked for dirs-a 1 and dirs-b 2 and 7: %+v", d.Topics)
	}
	if _, ok := d.Topics["dirs-b"][2]; !ok {
		t.Fatalf("dirs-b 2 missing: %+v", d.Topics)
	}
}

// TestAlterReplicaLogDirs: on a node with one log dir, AlterReplicaLogDirs
// (raw kmsg: kadm's AlterReplicaLogDirs sends the same request) answers as
// Kafka's single-log-dir broker: a partition it holds, asked into the dir
// DescribeLogDirs names, NONE (nothing moves); another dir
// LOG_DIR_NOT_FOUND; a partition it does not hold REPLICA_NOT_AVAILABLE.
func TestAlterReplicaLogDirs(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	cl := testnode.Client(t, n.KafkaAddr())
	ctx := proctest.Context(t, 60*time.Second)
	adm := kadm.NewClient(cl)
	if resp, err := adm.CreateTopic(ctx, 2, 1, nil, "move-me"); err != nil || resp.Err != nil {
		t.Fatal(err, resp.Err)
	}
	var logDir string
	if err := proctest.WaitFor(30*time.Second, func() bool {
		dirs, err := adm.DescribeBrokerLogDirs(ctx, 0, kadm.TopicsSet{"move-me": {0: {}, 1: {}}})
		if err != nil || len(dirs) != 1 {
			return false
		}
		for d, ld := range dirs {
			logDir = d
			return len(ld.Topics["move-me"]) == 2
		}
		return false
	}); err != nil {
		t.Fatalf("DescribeLogDirs never showed move-me's partitions: %v", err)
	}
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	for _, d := range []struct {
		dir   string
		parts []int32
	}{{logDir, []int32{0, 7}}, {"/elsewhere", []int32{1}}} {
		rd := kmsg.NewAlterReplicaLogDirsRequestDir()
		rd.Dir = d.dir
		rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
		rt.Topic, rt.Partitions = "move-me", d.parts
		rd.Topics = append(rd.Topics, rt)
		req.Dirs = append(req.Dirs, rd)
	}
	resp, err := req.RequestWith(ctx, cl.Broker(0))
	if err != nil {
		t.Fatal(err)
	}
	got := map[int32]int16{}
	for _, rt := range resp.Topics {
		if rt.Topic != "move-me" {
			t.Fatalf("answer for topic %q", rt.Topic)
		}
		for _, p := range rt.Partitions {
			got[p.Partition] = p.ErrorCode
		}
	}
	want := map[int32]int16{0: 0, 7: kerr.ReplicaNotAvailable.Code, 1: kerr.LogDirNotFound.Code}
	if len(resp.Topics) != 1 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("AlterReplicaLogDirs v%d: %v, want %v", resp.Version, got, want)
	}
}
