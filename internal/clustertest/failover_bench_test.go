package clustertest

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/natsembed"
	"github.com/shale-io/shale/internal/proctest"
)

// BenchmarkLeaderFailover is issue 15 item 10's figure, for `make bench`:
// three shale processes with the default settings on one NATS server (in
// this process, as an external NATS), a topic with RF=3 and
// min.insync.replicas=2. Twenty times, the leader of partition 0 is killed
// with SIGKILL, and the time from the kill until an acks=all produce to
// partition 0 is acknowledged (by the new leader, through a franz-go
// client that was producing to the old one) is measured; the killed node
// is restarted and back in the ISR before the next round. The peer,
// measured in the same run: the same with SIGTERM (a controlled shutdown
// moves the leadership first), five times. Reported: the kill -9 p50,
// p99 and max (p50-ms, p99-ms, max-ms), the broker session timeout
// (session-ms) and p99 over it, and the clean stop's p50 and p99 with
// p50 over it. The benchmark asserts nothing about time; every round must
// complete within generous bounds (a failover that never happens fails).
//
// SHALE_BENCH_FAILOVER_PARTITIONS gives the topic more partitions (the
// first count; default 1): the killed node then leads about a third of
// them, and partition 0 is still the one measured.
//
// One iteration is the whole workload: run it with -benchtime 1x.
func BenchmarkLeaderFailover(b *testing.B) {
	const (
		topic  = "failover"
		kills  = 20
		clean  = 5
		bound  = 60 * time.Second // per round: a failover that does not happen fails
		rounds = kills + clean
	)
	session := config.Defaults().BrokerSessionTimeout
	parts := partitionCounts(b, "SHALE_BENCH_FAILOVER_PARTITIONS", 1)[0]
	b.ReportMetric(float64(parts), "partitions")
	for range b.N {
		b.StopTimer()
		dir := b.TempDir()
		srv, err := natsembed.Start(natsembed.Config{StoreDir: filepath.Join(dir, "nats"), Port: -1, Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		nodes := make([]*proctest.Node, 3)
		for i := range nodes {
			nodes[i] = proctest.Serve(b, shaleBin, filepath.Join(dir, fmt.Sprintf("node-%d", i+1)),
				[]string{"--node-id", fmt.Sprint(i + 1), "--nats", srv.ClientURL()},
				proctest.Name(fmt.Sprintf("failover bench node %d", i+1)))
			nodes[i].Start()
		}
		for _, n := range nodes {
			n.WaitReady()
		}
		ctx := proctest.Context(b, time.Duration(rounds)*2*bound)
		seeds := make([]string, len(nodes))
		for i, n := range nodes {
			seeds[i] = n.Kafka()
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
			kgo.MetadataMinAge(50*time.Millisecond), kgo.RecordDeliveryTimeout(bound))
		if err != nil {
			b.Fatal(err)
		}
		adm := kadm.NewClient(cl)
		if err := proctest.WaitFor(30*time.Second, func() bool {
			m, err := adm.Metadata(ctx)
			return err == nil && len(m.Brokers) == 3 && m.Controller > 0
		}); err != nil {
			b.Fatal("three brokers and a controller: ", err)
		}
		two := "2"
		if _, err := adm.CreateTopic(ctx, parts, 3, map[string]*string{"min.insync.replicas": &two}, topic); err != nil {
			b.Fatal(err)
		}
		// inSync waits until partition 0 has a leader and all three replicas
		// in its ISR, and returns the leader.
		inSync := func() int32 {
			var leader int32
			var last string
			if err := proctest.WaitFor(bound, func() bool {
				m, err := adm.Metadata(ctx, topic)
				if err != nil {
					last = err.Error()
					return false
				}
				p := m.Topics[topic].Partitions[0]
				leader, last = p.Leader, fmt.Sprintf("leader %d isr %v", p.Leader, p.ISR)
				return p.Leader > 0 && len(p.ISR) == 3
			}); err != nil {
				b.Fatalf("%s-0 not back in sync: %s", topic, last)
			}
			return leader
		}
		n := 0
		produce := func() {
			n++
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: fmt.Appendf(nil, "%d", n)}).FirstErr(); err != nil {
				b.Fatalf("acks=all produce %d: %v", n, err)
			}
		}
		measure := func(stop func(*proctest.Node)) time.Duration {
			victim := nodes[inSync()-1]
			produce() // the client knows the leader and has a connection to it
			begin := time.Now()
			stop(victim)
			produce()
			took := time.Since(begin)
			victim.Start()
			victim.WaitReady()
			return took
		}
		var killed, stopped []time.Duration
		b.StartTimer()
		for range kills {
			killed = append(killed, measure(func(n *proctest.Node) { n.Kill() }))
		}
		for range clean {
			stopped = append(stopped, measure(func(n *proctest.Node) { n.Stop(bound) }))
		}
		b.StopTimer()
		inSync()
		cl.Close()
		for _, n := range nodes {
			n.CheckNoPanic()
		}
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		p99 := percentile(killed, 0.99)
		b.ReportMetric(ms(percentile(killed, 0.5)), "p50-ms")
		b.ReportMetric(ms(p99), "p99-ms")
		b.ReportMetric(ms(slices.Max(killed)), "max-ms")
		b.ReportMetric(ms(session), "session-ms")
		b.ReportMetric(ms(p99)/ms(session), "p99-over-session-ratio")
		b.ReportMetric(ms(percentile(stopped, 0.5)), "clean-p50-ms")
		b.ReportMetric(ms(percentile(stopped, 0.99)), "clean-p99-ms")
		b.ReportMetric(ms(percentile(killed, 0.5))/ms(percentile(stopped, 0.5)), "p50-over-clean-p50-ratio")
		b.Logf("kill -9 of the leader, %d times: until an acks=all produce succeeds %v", kills, roundAll(killed))
		b.Logf("SIGTERM of the leader, %d times: %v", clean, roundAll(stopped))
		for _, n := range nodes {
			n.Stop(bound)
		}
		srv.Shutdown()
	}
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}
