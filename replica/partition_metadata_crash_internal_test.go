package replica

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/segment/vfs"
)

// oneTopicMetadata is a control plane that assigns one topic's partition 0
// to node 1 as its leader; no events, no updates.
type oneTopicMetadata struct{ topic controlplane.Topic }

func (m oneTopicMetadata) Topics() []controlplane.Topic { return []controlplane.Topic{m.topic} }
func (m oneTopicMetadata) Topic(name string) (controlplane.Topic, bool) {
	return m.topic, name == m.topic.Name
}
func (m oneTopicMetadata) Partitions(topic string) []controlplane.PartitionState {
	if topic != m.topic.Name {
		return nil
	}
	return []controlplane.PartitionState{{TopicID: m.topic.ID, Topic: topic, Partition: 0,
		Replicas: []int32{1}, Leader: 1, LeaderEpoch: 1, ISR: []int32{1}}}
}
func (m oneTopicMetadata) Partition(topic string, p int32) (controlplane.PartitionState, bool) {
	for _, st := range m.Partitions(topic) {
		if st.Partition == p {
			return st, true
		}
	}
	return controlplane.PartitionState{}, false
}
func (oneTopicMetadata) Brokers() []controlplane.Broker { return nil }
func (oneTopicMetadata) UpdatePartition(_ context.Context, st controlplane.PartitionState) (controlplane.PartitionState, error) {
	return st, nil
}
func (oneTopicMetadata) Subscribe(func(controlplane.Event)) func() { return func() {} }

// A power loss after a partition was created and written to must leave its
// partition.metadata naming the topic id it was made for: a node that finds
// it empty or missing cannot tell the directory's data from that of a topic
// re-created under the same name, and serves the old topic's records as the
// new one's. The crash is simulated on the crashable memory filesystem,
// which keeps only what was fsynced (file contents and directory entries).
func TestPartitionMetadataSurvivesPowerLoss(t *testing.T) {
	mem := vfs.NewMem()
	logs := filepath.Join(t.TempDir(), "logs") // where a write that misses the FS lands
	// The log dir exists, durably, before the node starts.
	if err := mem.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := logs; ; d = filepath.Dir(d) {
		if err := vfs.SyncDir(mem, d); err != nil {
			t.Fatal(err)
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	old := controlplane.Topic{Name: "events", ID: controlplane.NewTopicID(), Partitions: 1, ReplicationFactor: 1}
	m := New(Config{NodeID: 1, LogsDir: logs, FS: mem, Logger: slog.New(slog.DiscardHandler)}, oneTopicMetadata{old})
	if err := m.Reconcile(); err != nil {
		t.Fatal(err)
	}
	rep, ok := m.Local("events", 0)
	if !ok {
		t.Fatal("partition 0 not opened")
	}
	b, err := batch.Build(nil, batch.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]batch.Record{{Value: []byte("of the old topic")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rep.AppendLeader(b); err != nil {
		t.Fatal(err)
	}
	if err := rep.Log().Flush(); err != nil { // the record is durable
		t.Fatal(err)
	}
	crashed := mem.CrashClone() // power loss; m's goroutines keep m's FS
	m.Close()

	dir := filepath.Join(logs, "events-0")
	if got, _ := crashed.ReadFile(filepath.Join(dir, partitionMetadataFile)); string(got) != "version: 0\ntopic_id: "+old.ID.String()+"\n" {
		t.Errorf("partition.metadata after the crash = %q, want the topic id %s", got, old.ID)
	}

	// The topic is deleted and re-created while the node is down: the
	// restarted node must not serve the old topic's record as the new one's.
	recreated := old
	recreated.ID = controlplane.NewTopicID()
	m2 := New(Config{NodeID: 1, LogsDir: logs, FS: crashed, Logger: slog.New(slog.DiscardHandler)}, oneTopicMetadata{recreated})
	defer m2.Close()
	if err := m2.Reconcile(); err != nil {
		t.Fatal(err)
	}
	rep2, ok := m2.Local("events", 0)
	if !ok {
		t.Fatal("partition 0 of the re-created topic not opened")
	}
	if leo := rep2.Log().LogEndOffset(); leo != 0 {
		t.Fatalf("the re-created topic's partition opened with log end offset %d: the old topic's data was taken for the new one's", leo)
	}
}
