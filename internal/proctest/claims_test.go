package proctest

import (
	"slices"
	"testing"
)

func TestLeadClaimsAndConflicts(t *testing.T) {
	log1 := `level=INFO msg="became leader" node=1 topic=ha partition=0 leader_epoch=0 leader=1
level=INFO msg="became follower" node=1 topic=ha partition=1 leader_epoch=0 leader=2
level=INFO msg="became leader" node=1 topic=ha partition=1 leader_epoch=1 leader=1
level=INFO msg="became leader" node=1 topic=ha partition=0 leader_epoch=0 leader=1`
	log2 := `level=INFO msg="became leader" node=2 topic=ha partition=1 leader_epoch=0 leader=2
level=INFO msg="became leader" node=2 topic=ha partition=1 leader_epoch=1 leader=2
level=INFO msg="became leader" node=2 topic=hb partition=0 leader_epoch=0 leader=2`
	c1, err := LeadClaims(log1, "became leader", "node")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := LeadClaims(log2, "became leader", "node")
	if err != nil {
		t.Fatal(err)
	}
	if len(c1) != 3 || len(c2) != 3 {
		t.Fatalf("claims: %d and %d, want 3 and 3", len(c1), len(c2))
	}
	if want := (LeadClaim{Node: 1, Topic: "ha", Partition: 1, Epoch: 1}); c1[1] != want {
		t.Fatalf("claim %+v, want %+v", c1[1], want)
	}
	if got := EpochConflicts(c1); len(got) != 0 {
		t.Fatalf("one node repeating a claim is no conflict: %v", got)
	}
	got := EpochConflicts(append(c1, c2...))
	want := []string{"ha-1 epoch 1 led by nodes [1 2]"}
	if !slices.Equal(got, want) {
		t.Fatalf("conflicts = %v, want %v", got, want)
	}
	if _, err := LeadClaims(`level=INFO msg="became leader" node=1 partition=0`, "became leader", "node"); err == nil {
		t.Fatal("a claim line without topic and epoch parsed")
	}
	ctl, err := LeadClaims(`level=INFO msg="elected leader" node=3 topic=ha partition=2 leader=1 leader_epoch=5`, "elected leader", "leader")
	if err != nil || len(ctl) != 1 || ctl[0].Node != 1 {
		t.Fatalf("controller claim %v, %v: want node 1 from the leader attribute", ctl, err)
	}
}
