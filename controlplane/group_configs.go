package controlplane

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// BucketGroupConfigs holds the group configs (KIP-848, KIP-932), one key
// per group that has any.
const BucketGroupConfigs = "shale_group_configs"

// GroupConfigs is the cluster's group configs, Kafka's GROUP config
// resources, in their own JetStream key-value bucket: one key per group
// id (base64url) holding the group's own configs as a JSON object of
// strings. Writes are compare-and-set. Every node watches the bucket
// (Watch) and keeps what it holds in memory, which the coordinators read
// at each heartbeat and acquisition (Configs) without I/O. Values are
// stored as given: package coordinator's GroupConfigRules validates them
// before they are written. Safe for concurrent use.
type GroupConfigs struct {
	*watchedBucket

	mu struct {
		sync.Mutex
		// byGroup is the bucket as this node last saw it; its maps are
		// never modified once stored.
		byGroup map[string]map[string]string
		// revs is the revision each group's entry in byGroup is of (a
		// deleted group's too), so that a write this node remembers and
		// its watch delivers in either order leave the newer one.
		revs map[string]uint64
	}
}

// OpenGroupConfigs opens (creating it if absent) the group configs bucket
// with the given number of JetStream replicas. mon counts and logs the
// re-establishments of its watches (nil: not counted).
func OpenGroupConfigs(ctx context.Context, nc *nats.Conn, replicas int, mon *ConnMonitor) (*GroupConfigs, error) {
	b, err := openWatchedBucket(ctx, nc, jetstream.KeyValueConfig{Bucket: BucketGroupConfigs, Replicas: replicas,
		Description: "Shale group configs (KIP-848, KIP-932)"}, "group configs", mon)
	if err != nil {
		return nil, err
	}
	g := &GroupConfigs{watchedBucket: b}
	g.mu.byGroup = map[string]map[string]string{}
	g.mu.revs = map[string]uint64{}
	return g, nil
}

// Alter applies change to the group's configs by compare-and-set: change
// gets a copy of the current configs (empty when the group has none) and
// returns the new ones, or an error that Alter returns unchanged; empty
// new configs delete the key. It retries a lost race up to 20 times.
func (g *GroupConfigs) Alter(ctx context.Context, group string, change func(map[string]string) (map[string]string, error)) error {
	next, rev, err := alterJSON(ctx, g.kv, nameKey(group), fmt.Sprintf("group configs %q", group), true, change)
	if err == nil && rev > 0 {
		g.remember(group, next, rev)
	}
	return err
}

// Get returns the group's stored configs, nil when it has none. It reads
// the bucket, so a describe after an alteration on any node sees it.
func (g *GroupConfigs) Get(ctx context.Context, group string) (map[string]string, error) {
	cur, _, err := getJSON[map[string]string](ctx, g.kv, nameKey(group), fmt.Sprintf("group configs %q", group))
	return cur, err
}

// Delete deletes the group's configs (when the group is deleted, as Kafka
// does). A group without configs is not an error.
func (g *GroupConfigs) Delete(ctx context.Context, group string) error {
	return g.Alter(ctx, group, func(map[string]string) (map[string]string, error) { return nil, nil })
}

// Names lists the groups that have configs (ListConfigResources).
func (g *GroupConfigs) Names(ctx context.Context) ([]string, error) { return g.names(ctx) }

// Configs returns the group's configs as this node last saw them (its
// watch, or its own writes), nil when it has none. The caller must not
// modify the returned map. No I/O.
func (g *GroupConfigs) Configs(group string) map[string]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mu.byGroup[group]
}

// remember records the group's configs of revision rev in memory, unless
// it holds a newer revision: Alter calls it so that this node applies its
// own alteration before its watch delivers it.
func (g *GroupConfigs) remember(group string, configs map[string]string, rev uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if rev < g.mu.revs[group] {
		return
	}
	g.mu.revs[group] = rev
	if len(configs) == 0 {
		delete(g.mu.byGroup, group)
		return
	}
	g.mu.byGroup[group] = maps.Clone(configs)
}

// Watch keeps Configs current: it loads every group's configs the bucket
// holds, then applies every change, from one goroutine, in revision
// order, until Close. It returns once the current configs are loaded, or
// when ctx ends first. A value that does not decode is skipped.
func (g *GroupConfigs) Watch(ctx context.Context) error {
	return g.watch(ctx, func(ch change) {
		b, err := base64.RawURLEncoding.DecodeString(ch.key)
		if err != nil {
			return
		}
		if v, ok := changedJSON[map[string]string](ch); ok {
			g.remember(string(b), v, ch.rev)
		}
	})
}
