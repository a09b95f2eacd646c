package clustertest

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

func TestPercentile(t *testing.T) {
	var xs []time.Duration
	for i := 100; i >= 1; i-- {
		xs = append(xs, time.Duration(i))
	}
	if p := percentile(xs, 0.5); p != 50 {
		t.Fatalf("p50 = %d", p)
	}
	if p := percentile(xs, 0.99); p != 99 {
		t.Fatalf("p99 = %d", p)
	}
	if p := percentile(xs[:20], 0.99); p != 100 {
		t.Fatalf("p99 of 20 = %d, want the max", p)
	}
}

// TestEveryPartition checks the metadata test the benchmarks wait on:
// every partition listed, none with an error, each satisfying ok.
func TestEveryPartition(t *testing.T) {
	full := func(pd kadm.PartitionDetail) bool { return pd.Leader >= 0 && len(pd.ISR) == 3 }
	md := func(parts ...kadm.PartitionDetail) kadm.Metadata {
		td := kadm.TopicDetail{Topic: "t", Partitions: kadm.PartitionDetails{}}
		for _, pd := range parts {
			td.Partitions[pd.Partition] = pd
		}
		return kadm.Metadata{Topics: kadm.TopicDetails{"t": td}}
	}
	p0 := kadm.PartitionDetail{Partition: 0, Leader: 1, ISR: []int32{1, 2, 3}}
	p1 := kadm.PartitionDetail{Partition: 1, Leader: 2, ISR: []int32{1, 2, 3}}
	if !everyPartition(md(p0, p1), "t", 2, full) {
		t.Fatal("two full partitions of two: false")
	}
	if everyPartition(md(p0), "t", 2, full) {
		t.Fatal("one partition listed of two: true")
	}
	if everyPartition(md(p0, p1), "other", 2, full) {
		t.Fatal("a topic not listed: true")
	}
	shrunk := p1
	shrunk.ISR = []int32{2}
	if everyPartition(md(p0, shrunk), "t", 2, full) {
		t.Fatal("a partition that fails ok: true")
	}
	failed := p1
	failed.Err = errors.New("leader not available")
	if everyPartition(md(p0, failed), "t", 2, func(kadm.PartitionDetail) bool { return true }) {
		t.Fatal("a partition with an error: true")
	}
}
