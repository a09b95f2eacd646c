package broker_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/segment"
)

// TestFlushMsThroughTheNode: a topic's flush.ms is carried out by the
// node's once-a-second flush pass, which visits the partitions only while
// some log has such work (segment.AnyFlushDue): a topic created with
// flush.ms, and one given it later by IncrementalAlterConfigs while every
// log was idle, both get their produced records flushed (the recovery
// point, written by a flush, reaches the log end) with the node running.
//
// It is the node's wiring (broker.flushLoop) and needs a test process in
// which every log goes idle: segment.AnyFlushDue counts the logs of the
// whole process, and in package segment's tests the unit tests' own logs
// kept it true (it failed there, waiting for every log idle).
func TestFlushMsThroughTheNode(t *testing.T) {
	dir := t.TempDir()
	n := testnode.Start(t, dir)
	cl := testnode.Client(t, n.KafkaAddr(), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	adm := kadm.NewClient(cl)
	ctx := proctest.Context(t, 90*time.Second)
	flushMs := "200"
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "later"); err != nil {
		t.Fatal(err)
	}
	recoveryPoint := func(topic string) int64 {
		b, err := os.ReadFile(filepath.Join(dir, "logs", topic+"-0", "recovery-point"))
		if err != nil {
			return -1
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return -1
		}
		return v
	}
	produce := func(topic string, count int) {
		t.Helper()
		for i := range count {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// "later" has records and no flush.ms; every log of the process goes
	// idle once the flush pass has visited it.
	produce("later", 7)
	proctest.Eventually(t, 30*time.Second, "every log idle", func() bool { return !segment.AnyFlushDue() })
	if rp := recoveryPoint("later"); rp >= 7 {
		t.Fatalf("recovery point of a topic without flush.ms is %d before any flush.ms", rp)
	}
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "flush.ms", Value: &flushMs}}, "later"); err != nil {
		t.Fatal(err)
	}
	proctest.Eventually(t, 30*time.Second, "flush.ms set later flushes the topic", func() bool { return recoveryPoint("later") >= 7 })

	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"flush.ms": &flushMs}, "flushed"); err != nil {
		t.Fatal(err)
	}
	produce("flushed", 5)
	proctest.Eventually(t, 30*time.Second, "flush.ms flushes a topic created with it", func() bool { return recoveryPoint("flushed") >= 5 })
}
