package replica

import (
	"reflect"
	"testing"
)

// TestFetcherPatchLeavesARoundsSnapshot: a change after a round took its
// snapshot copies the map once and leaves the round's map and list as they
// were; further changes before the next snapshot change that copy, and the
// next snapshot lists them all under a new list generation.
func TestFetcherPatchLeavesARoundsSnapshot(t *testing.T) {
	ft := &fetcher{f: &fetchers{}}
	k := func(p int32) replicaKey { return replicaKey{topic: "t", partition: p} }
	follow := func(ps ...int32) map[replicaKey]followed {
		m := map[replicaKey]followed{}
		for _, p := range ps {
			m[k(p)] = followed{leader: 2, epoch: 1}
		}
		return m
	}
	ft.patch(follow(0), nil)
	parts, list, gen, _ := ft.snapshot()
	if len(parts) != 1 || len(list) != 1 {
		t.Fatalf("first snapshot: %d parts, %d listed", len(parts), len(list))
	}
	ft.patch(follow(1), nil)
	copied := reflect.ValueOf(ft.parts).Pointer()
	if copied == reflect.ValueOf(parts).Pointer() {
		t.Fatal("a change after the snapshot changed the round's map")
	}
	ft.patch(follow(2), []replicaKey{k(0)})
	if reflect.ValueOf(ft.parts).Pointer() != copied {
		t.Fatal("a second change before the next snapshot copied the map again")
	}
	if _, ok := parts[k(0)]; !ok || len(parts) != 1 || len(list) != 1 || list[0].key != k(0) {
		t.Fatalf("the round's snapshot changed: %v %v", parts, list)
	}
	parts2, list2, gen2, _ := ft.snapshot()
	if len(parts2) != 2 || len(list2) != 2 || gen2 != gen+1 {
		t.Fatalf("second snapshot: %d parts, %d listed, generation %d after %d", len(parts2), len(list2), gen2, gen)
	}
	if _, ok := parts2[k(0)]; ok {
		t.Fatal("a removed partition is still followed")
	}
	// Nothing changed since: the same map and list, the same generation.
	parts3, list3, gen3, _ := ft.snapshot()
	if reflect.ValueOf(parts3).Pointer() != reflect.ValueOf(parts2).Pointer() || len(list3) != 2 || gen3 != gen2 {
		t.Fatal("a snapshot with no change since made a new map or list")
	}
}
