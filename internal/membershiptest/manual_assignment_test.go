package membershiptest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
)

// createAssigned sends CreateTopics for topic with a manual replica
// assignment (partition i gets assignment[i]), numPartitions and
// replicationFactor -1 unless given, and returns the topic's error.
func (c *cluster) createAssigned(topic string, assignment [][]int32, parts int32, rf int16) error {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, parts, rf
	for i, replicas := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(proctest.Context(c.t, 30*time.Second), c.client())
	if err != nil {
		c.t.Fatal(err)
	}
	return topicErr(resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage)
}

// addAssigned sends CreatePartitions growing topic to count with the given
// replicas for the new partitions, and returns the topic's error.
func (c *cluster) addAssigned(topic string, count int32, assignment [][]int32) error {
	c.t.Helper()
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	for _, replicas := range assignment {
		a := kmsg.NewCreatePartitionsRequestTopicAssignment()
		a.Replicas = replicas
		rt.Assignment = append(rt.Assignment, a)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(proctest.Context(c.t, 30*time.Second), c.client())
	if err != nil {
		c.t.Fatal(err)
	}
	return topicErr(resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage)
}

func topicErr(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err != nil && msg != nil {
		return fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}

// TestManualReplicaAssignment places replicas by hand with CreateTopics and
// CreatePartitions, as Kafka's tools and balancers do: each partition gets
// exactly the replicas asked for, in that order, led by the first, and takes
// acks=all writes; assignments Kafka refuses are refused with its codes.
// Before, every manual assignment was answered "manual replica assignment is
// not supported" (INVALID_REQUEST).
func TestManualReplicaAssignment(t *testing.T) {
	c := startCluster(t, 1, 2, 3, 4)
	refused := []struct {
		name       string
		assignment [][]int32
		parts      int32
		rf         int16
		want       error
	}{
		{"uneven replica counts", [][]int32{{1, 2, 3}, {1, 2}}, -1, -1, kerr.InvalidReplicaAssignment},
		{"a broker twice", [][]int32{{1, 1, 2}}, -1, -1, kerr.InvalidReplicaAssignment},
		{"an unregistered broker", [][]int32{{1, 2, 9}}, -1, -1, kerr.InvalidReplicaAssignment},
		{"a partition count beside the assignment", [][]int32{{1, 2, 3}}, 1, -1, kerr.InvalidRequest},
	}
	for _, r := range refused {
		if err := c.createAssigned("refused", r.assignment, r.parts, r.rf); !errors.Is(err, r.want) {
			t.Errorf("%s: %v, want %v", r.name, err, r.want)
		}
	}
	const topic = "placed"
	want := [][]int32{{4, 1, 2}, {2, 3, 4}}
	if err := c.createAssigned(topic, want, -1, -1); err != nil {
		t.Fatal(err)
	}
	if err := c.addAssigned(topic, 3, [][]int32{{1, 2}}); !errors.Is(err, kerr.InvalidReplicaAssignment) {
		t.Errorf("CreatePartitions with two replicas for a replication factor 3 topic: %v", err)
	}
	if err := c.addAssigned(topic, 4, [][]int32{{3, 4, 1}}); !errors.Is(err, kerr.InvalidReplicaAssignment) {
		t.Errorf("CreatePartitions with one assignment for two new partitions: %v", err)
	}
	if err := c.addAssigned(topic, 3, [][]int32{{3, 4, 1}}); err != nil {
		t.Fatal(err)
	}
	want = append(want, []int32{3, 4, 1})
	for p, replicas := range want {
		pv := c.WaitPartition(topic, int32(p), 30*time.Second, func(pv proctest.Partition) bool {
			return slices.Equal(pv.Order, replicas) && len(pv.ISR) == 3
		})
		if pv.Leader != replicas[0] {
			t.Fatalf("%s-%d: %v, want led by %d", topic, p, pv, replicas[0])
		}
		offsets := c.produce(topic, int32(p), 100)
		c.checkRecords(topic, int32(p), offsets)
	}
	c.CheckNoPanic()
}
