package compat

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/testnode"
)

// saramaHandler records every message and marks it after "processing";
// sarama commits marked offsets (auto-commit) and on leaving.
type saramaHandler struct{ seen *testnode.SeenSet }

func (saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		h.seen.Add(&kgo.Record{Value: msg.Value})
		sess.MarkMessage(msg, "")
	}
	return nil
}

func startSarama(t *testing.T, addr, grp, topic string, seen *testnode.SeenSet) (stop func()) {
	t.Helper()
	c := sarama.NewConfig()
	c.Version = sarama.V3_6_0_0
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
	c.Consumer.Group.Session.Timeout = 3 * time.Second
	c.Consumer.Group.Heartbeat.Interval = 300 * time.Millisecond
	c.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	c.Consumer.MaxWaitTime = 200 * time.Millisecond
	g, err := sarama.NewConsumerGroup([]string{addr}, grp, c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{topic}, saramaHandler{seen}); err != nil && ctx.Err() == nil {
				t.Logf("sarama consume: %v", err)
			}
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			g.Close()
		})
	}
	t.Cleanup(stop)
	return stop
}

func TestGroupSaramaConsumerGroup(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	addr := n.KafkaAddr()
	adm := kadm.NewClient(testnode.Client(t, addr))
	testnode.CreateTopic(t, adm, "sar", 4)
	seen := testnode.NewSeenSet()
	ends := testnode.Ends{}
	produce := func(tag string) { ends.Produce(t, addr, "sar", 200, tag) }
	stop1 := startSarama(t, addr, "sarama-group", "sar", seen)
	produce("a")
	startSarama(t, addr, "sarama-group", "sar", seen)
	testnode.WaitStable(t, adm, "sarama-group", 2)
	produce("b")
	stop1() // leaves
	produce("c")
	startSarama(t, addr, "sarama-group", "sar", seen)
	produce("d")

	deadline := time.Now().Add(90 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	tags := []string{"a", "b", "c", "d"}
	for {
		miss, behind := seen.Missing(tags, 200), 0
		if miss == 0 {
			got := testnode.Committed(t, adm, "sarama-group")
			for p, end := range ends {
				if o, _ := got.Lookup("sar", p); o.At != end {
					behind++
				}
			}
			if behind == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("sarama group: %d records never consumed, %d partitions behind", miss, behind)
		}
		<-tick.C
	}
}
