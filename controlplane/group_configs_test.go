package controlplane

import (
	"errors"
	"maps"
	"testing"
	"time"
)

// TestGroupConfigs: an alteration on one node is seen at once by that
// node's Configs and, through its watch, by another node's; a delete
// removes it everywhere; a store opened afterwards loads what the bucket
// holds.
func TestGroupConfigs(t *testing.T) {
	s := startNATS(t)
	ctx := testCtx(t)
	a, err := OpenGroupConfigs(ctx, connect(t, s), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenGroupConfigs(ctx, connect(t, s), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	set := func(k, v string) func(map[string]string) (map[string]string, error) {
		return func(cur map[string]string) (map[string]string, error) { cur[k] = v; return cur, nil }
	}
	group := "orders/é:1" // any character
	if err := a.Alter(ctx, group, set("consumer.session.timeout.ms", "50000")); err != nil {
		t.Fatal(err)
	}
	if got := a.Configs(group); got["consumer.session.timeout.ms"] != "50000" {
		t.Fatalf("writer's own view: %v", got)
	}
	if err := b.Alter(ctx, group, set("share.delivery.count.limit", "3")); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"consumer.session.timeout.ms": "50000", "share.delivery.count.limit": "3"}
	eventually(t, 10*time.Second, "both nodes see both configs", func() bool {
		return maps.Equal(a.Configs(group), want) && maps.Equal(b.Configs(group), want)
	})
	if got, err := a.Get(ctx, group); err != nil || !maps.Equal(got, want) {
		t.Fatalf("Get: %v %v", got, err)
	}
	if names, err := a.Names(ctx); err != nil || len(names) != 1 || names[0] != group {
		t.Fatalf("Names: %v %v", names, err)
	}
	// A change that fails writes nothing.
	boom := errors.New("refused")
	if err := a.Alter(ctx, group, func(map[string]string) (map[string]string, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("failing change: %v", err)
	}
	c, err := OpenGroupConfigs(ctx, connect(t, s), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.Configs(group); !maps.Equal(got, want) {
		t.Fatalf("a store opened later loads %v, want %v", got, want)
	}
	if err := b.Delete(ctx, group); err != nil {
		t.Fatal(err)
	}
	if got := b.Configs(group); got != nil {
		t.Fatalf("deleter still holds %v", got)
	}
	eventually(t, 10*time.Second, "every node drops the deleted configs", func() bool {
		return a.Configs(group) == nil && c.Configs(group) == nil
	})
	if got, err := a.Get(ctx, group); err != nil || got != nil {
		t.Fatalf("Get after delete: %v %v", got, err)
	}
	if err := a.Delete(ctx, "never-configured"); err != nil {
		t.Fatalf("deleting a group without configs: %v", err)
	}
}
