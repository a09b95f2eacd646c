package compat

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// rdkafkaMember is a librdkafka consumer in a KIP-848 group
// (group.protocol=consumer) polling in its own goroutine: it records what
// it consumed and commits each record synchronously.
type rdkafkaMember struct {
	c    *kafka.Consumer
	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex
	assigned []int32
}

func startRdkafkaMember(t *testing.T, addr, grp, topic string, seen func(string), commitErr func(error)) *rdkafkaMember {
	t.Helper()
	c, err := kafka.NewConsumer(with(confluentConfig(addr),
		"group.id", grp, "group.protocol", "consumer", "enable.auto.commit", false,
		"auto.offset.reset", "earliest", "fetch.wait.max.ms", 100))
	if err != nil {
		t.Fatalf("NewConsumer (group.protocol=consumer): %v", err)
	}
	m := &rdkafkaMember{c: c, stop: make(chan struct{}), done: make(chan struct{})}
	if err := c.SubscribeTopics([]string{topic}, nil); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	go func() {
		defer close(m.done)
		for {
			select {
			case <-m.stop:
				return
			default:
			}
			switch ev := c.Poll(100).(type) {
			case *kafka.Message:
				if ev.TopicPartition.Error != nil {
					continue
				}
				seen(string(ev.Value))
				if _, err := c.CommitMessage(ev); err != nil {
					commitErr(err)
				}
			case kafka.Error:
				if ev.IsFatal() {
					commitErr(ev)
				}
			}
			if tps, err := c.Assignment(); err == nil {
				ps := make([]int32, 0, len(tps))
				for _, tp := range tps {
					ps = append(ps, tp.Partition)
				}
				slices.Sort(ps)
				m.mu.Lock()
				m.assigned = ps
				m.mu.Unlock()
			}
		}
	}()
	return m
}

func (m *rdkafkaMember) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.assigned)
}

// close stops polling and closes the consumer (it leaves the group).
func (m *rdkafkaMember) close() {
	close(m.stop)
	<-m.done
	m.c.Close()
}

// TestConfluentConsumerProtocol: librdkafka with group.protocol=consumer
// (KIP-848) consumes, commits and rebalances: a second member takes half
// the partitions, the first leaves and the second takes them all; every
// record is consumed and committed.
func TestConfluentConsumerProtocol(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) {
		c.GroupConsumerHeartbeatInterval = 300 * time.Millisecond
		c.GroupConsumerSessionTimeout = 6 * time.Second
	})
	addr := n.KafkaAddr()
	const topic, grp, per = "kip848-rdkafka", "kip848-rdkafka-group", 150
	adm, err := kafka.NewAdminClient(with(confluentConfig(addr)))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx := proctest.Context(t, 3*time.Minute)
	if res, err := adm.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: topic, NumPartitions: 4, ReplicationFactor: 1}}); err != nil || res[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("CreateTopics: %v %v", res, err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var errs []error
	see := func(v string) { mu.Lock(); seen[v]++; mu.Unlock() }
	fail := func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
	produce := func(tag string) {
		recs := make([]record, per)
		for i := range recs {
			recs[i] = record{Partition: int32(i % 4), Offset: -1, Value: []byte(fmt.Sprintf("%s-%d", tag, i))}
		}
		confluentProduce(t, addr, topic, "none", recs)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := proctest.WaitFor(60*time.Second, cond); err != nil {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("%s: %v (consumed %d distinct, errors %v)", what, err, len(seen), errs)
		}
	}
	allSeen := func(tags ...string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, tag := range tags {
				for i := range per {
					if seen[fmt.Sprintf("%s-%d", tag, i)] == 0 {
						return false
					}
				}
			}
			return true
		}
	}

	m1 := startRdkafkaMember(t, addr, grp, topic, see, fail)
	produce("a")
	waitFor("the first member consumes every record", allSeen("a"))
	m2 := startRdkafkaMember(t, addr, grp, topic, see, fail)
	defer m2.close()
	waitFor("the partitions split over two members", func() bool {
		p1, p2 := m1.partitions(), m2.partitions()
		return len(p1) == 2 && len(p2) == 2 && !slices.ContainsFunc(p1, func(p int32) bool { return slices.Contains(p2, p) })
	})
	produce("b")
	waitFor("two members consume every record", allSeen("a", "b"))
	m1.close()
	waitFor("the second member takes every partition", func() bool { return len(m2.partitions()) == 4 })
	// The group is a KIP-848 one: ConsumerGroupDescribe knows it.
	cl := testnode.Client(t, addr)
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{grp}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Members) != 1 {
		t.Fatalf("ConsumerGroupDescribe: %+v %v, want the group with one member", resp, err)
	}
	if m := resp.Groups[0].Members[0]; m.MemberEpoch != resp.Groups[0].AssignmentEpoch || len(m.Assignment.TopicPartitions) != 1 ||
		len(m.Assignment.TopicPartitions[0].Partitions) != 4 {
		t.Errorf("the member left: epoch %d (assignment epoch %d), assignment %+v", m.MemberEpoch, resp.Groups[0].AssignmentEpoch, m.Assignment)
	}
	produce("c")
	waitFor("every record consumed", allSeen("a", "b", "c"))

	waitFor("every record committed", func() bool {
		res, err := adm.ListConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{Group: grp}})
		if err != nil || len(res.ConsumerGroupsTopicPartitions) != 1 {
			return false
		}
		var total int64
		for _, tp := range res.ConsumerGroupsTopicPartitions[0].Partitions {
			if tp.Error != nil || tp.Offset < 0 {
				return false
			}
			total += int64(tp.Offset)
		}
		return total == 3*per
	})
	// confluent-kafka-go's ListConsumerGroups checks each group's type
	// (ListGroups v5).
	lr, err := adm.ListConsumerGroups(ctx, kafka.SetAdminMatchConsumerGroupTypes([]kafka.ConsumerGroupType{kafka.ConsumerGroupTypeConsumer}))
	if err != nil || len(lr.Errors) > 0 {
		t.Fatalf("ListConsumerGroups: %v %v", err, lr.Errors)
	}
	found := false
	for _, l := range lr.Valid {
		if l.GroupID == grp {
			found = true
			if l.Type != kafka.ConsumerGroupTypeConsumer || l.State != kafka.ConsumerGroupStateStable {
				t.Errorf("ListConsumerGroups: %s is %v in state %v, want a Stable consumer group", grp, l.Type, l.State)
			}
		}
	}
	if !found {
		t.Errorf("ListConsumerGroups (type consumer) does not list %s: %+v", grp, lr.Valid)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, err := range errs {
		t.Errorf("consumer error: %v", err)
	}
}
