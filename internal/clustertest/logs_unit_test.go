package clustertest

import (
	"testing"
	"time"
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
