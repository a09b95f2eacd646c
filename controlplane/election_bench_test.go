package controlplane

import (
	"fmt"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
)

// BenchmarkElectAfterBrokerLoss is the controller's part of issue 23's
// failover figure, without the nodes: three brokers registered on one
// in-process NATS server (each on its own store and connection), one RF=3
// topic whose partitions they lead a third each, and broker 3 deregistered.
// Reported: the time from the deregistration until the controller's store
// shows no partition led by broker 3 (elect-ms) and the elections per
// second that makes (elections/s). One iteration is the whole workload: run
// it with -benchtime 1x; the partition counts are its sub-benchmarks.
func BenchmarkElectAfterBrokerLoss(b *testing.B) {
	for _, parts := range electPartitions {
		b.Run(fmt.Sprintf("partitions-%d", parts), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				electAfterBrokerLoss(b, parts)
			}
		})
	}
}

func electAfterBrokerLoss(b *testing.B, parts int32) {
	srv := startNATS(b)
	stores := map[int32]*Store{}
	for _, id := range []int32{1, 2, 3} {
		stores[id] = openStore(b, connect(b, srv), StoreConfig{Logger: quietLogger()})
		if err := stores[id].RegisterBroker(testCtx(b), broker(id)); err != nil {
			b.Fatal(err)
		}
	}
	s := stores[1]
	c, err := StartController(testCtx(b), s, ControllerConfig{NodeID: 1, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	eventually(b, 10*time.Second, "the controller", c.IsController)
	if _, err := s.CreateTopic(proctest.Context(b, 5*time.Minute), "many", parts, 3, nil); err != nil {
		b.Fatal(err)
	}
	ledBy3 := 0
	eventually(b, 5*time.Minute, "every partition led", func() bool {
		sts := s.Partitions("many")
		ledBy3 = 0
		for _, st := range sts {
			if st.Leader < 0 || st.LeaderIncarnation == "" {
				return false
			}
			if st.Leader == 3 {
				ledBy3++
			}
		}
		return int32(len(sts)) == parts
	})
	start := time.Now()
	if err := stores[3].DeregisterBroker(testCtx(b)); err != nil {
		b.Fatal(err)
	}
	eventually(b, 5*time.Minute, "no partition led by broker 3", func() bool {
		for _, st := range s.Partitions("many") {
			if st.Leader == 3 || st.Leader < 0 {
				return false
			}
		}
		return true
	})
	took := time.Since(start)
	b.ReportMetric(float64(took.Milliseconds()), "elect-ms")
	b.ReportMetric(float64(ledBy3)/took.Seconds(), "elections/s")
	b.ReportMetric(0, "ns/op")
}

// electPartitions are BenchmarkElectAfterBrokerLoss's sizes.
var electPartitions = []int32{1000, 10000}
