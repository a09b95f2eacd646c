package clustertest

import (
	"slices"
	"testing"
	"time"
)

func TestParseLogfmt(t *testing.T) {
	kv := parseLogfmt(`time=2026-01-02T03:04:05.000Z level=INFO msg="became leader" node=2 topic=ha partition=3 leader_epoch=4 leader=2 err="a \"quoted\" x=y"`)
	want := map[string]string{"level": "INFO", "msg": "became leader", "node": "2", "topic": "ha",
		"partition": "3", "leader_epoch": "4", "leader": "2", "err": `a "quoted" x=y`}
	for k, v := range want {
		if kv[k] != v {
			t.Errorf("%s = %q, want %q", k, kv[k], v)
		}
	}
}

func TestClaimsAndConflicts(t *testing.T) {
	log1 := `level=INFO msg="became leader" node=1 topic=ha partition=0 leader_epoch=0 leader=1
level=INFO msg="became follower" node=1 topic=ha partition=1 leader_epoch=0 leader=2
level=INFO msg="became leader" node=1 topic=ha partition=1 leader_epoch=1 leader=1
level=INFO msg="became leader" node=1 topic=ha partition=0 leader_epoch=0 leader=1`
	log2 := `level=INFO msg="became leader" node=2 topic=ha partition=1 leader_epoch=0 leader=2
level=INFO msg="became leader" node=2 topic=ha partition=1 leader_epoch=1 leader=2
level=INFO msg="became leader" node=2 topic=hb partition=0 leader_epoch=0 leader=2`
	c1, err := claims(log1, "became leader", "node")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := claims(log2, "became leader", "node")
	if err != nil {
		t.Fatal(err)
	}
	if len(c1) != 3 || len(c2) != 3 {
		t.Fatalf("claims: %d and %d, want 3 and 3", len(c1), len(c2))
	}
	if got := epochConflicts(c1); len(got) != 0 {
		t.Fatalf("one node repeating a claim is no conflict: %v", got)
	}
	got := epochConflicts(append(c1, c2...))
	want := []string{"ha-1 epoch 1 led by nodes [1 2]"}
	if !slices.Equal(got, want) {
		t.Fatalf("conflicts = %v, want %v", got, want)
	}
	if _, err := claims(`level=INFO msg="became leader" node=1 partition=0`, "became leader", "node"); err == nil {
		t.Fatal("a claim line without topic and epoch parsed")
	}
}

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
