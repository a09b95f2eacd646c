package controlplane

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
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
	kv  jetstream.KeyValue
	nc  *nats.Conn
	mon *ConnMonitor

	mu struct {
		sync.Mutex
		watches []*bucketWatch
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
	kv, err := OpenBucket(ctx, nc, jetstream.KeyValueConfig{Bucket: BucketGroupConfigs, Replicas: replicas,
		Description: "Shale group configs (KIP-848, KIP-932)"})
	if err != nil {
		return nil, fmt.Errorf("group configs: %w", err)
	}
	g := &GroupConfigs{kv: kv, nc: nc, mon: mon}
	g.mu.byGroup = map[string]map[string]string{}
	g.mu.revs = map[string]uint64{}
	return g, nil
}

// groupConfigKey is a group id as a key: base64url, since a group id may
// hold any character and keys only a few.
func groupConfigKey(group string) string { return base64.RawURLEncoding.EncodeToString([]byte(group)) }

// Alter applies change to the group's configs by compare-and-set: change
// gets a copy of the current configs (empty when the group has none) and
// returns the new ones, or an error that Alter returns unchanged; empty
// new configs delete the key. It retries a lost race up to 20 times.
func (g *GroupConfigs) Alter(ctx context.Context, group string, change func(map[string]string) (map[string]string, error)) error {
	key := groupConfigKey(group)
	for range 20 {
		cur, rev, err := g.read(ctx, group)
		if err != nil {
			return err
		}
		if cur == nil {
			cur = map[string]string{}
		}
		next, err := change(cur)
		if err != nil {
			return err
		}
		var newRev uint64
		switch {
		case len(next) == 0 && rev == 0:
			return nil
		case len(next) == 0:
			// The delete's own revision is not returned; it is above rev,
			// and no write of this key lies between them (compare-and-set).
			err, newRev = g.kv.Delete(ctx, key, jetstream.LastRevision(rev)), rev+1
		default:
			data, merr := json.Marshal(next)
			if merr != nil {
				return merr
			}
			if rev == 0 {
				newRev, err = g.kv.Create(ctx, key, data)
			} else {
				newRev, err = g.kv.Update(ctx, key, data, rev)
			}
		}
		if err == nil {
			g.remember(group, next, newRev)
			return nil
		}
		if !isWrongLastSeq(err) {
			return fmt.Errorf("controlplane: write group configs %q: %w", group, err)
		}
	}
	return fmt.Errorf("controlplane: write group configs %q: lost 20 races", group)
}

// read returns the group's stored configs and their revision (nil and 0
// when it has none). A value that is not a JSON object of strings is an
// error: the bucket is written only by Alter.
func (g *GroupConfigs) read(ctx context.Context, group string) (map[string]string, uint64, error) {
	entry, err := g.kv.Get(ctx, groupConfigKey(group))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("controlplane: read group configs %q: %w", group, err)
	}
	cur := map[string]string{}
	if err := json.Unmarshal(entry.Value(), &cur); err != nil {
		return nil, 0, fmt.Errorf("controlplane: group configs %q: %w", group, err)
	}
	return cur, entry.Revision(), nil
}

// Get returns the group's stored configs, nil when it has none. It reads
// the bucket, so a describe after an alteration on any node sees it.
func (g *GroupConfigs) Get(ctx context.Context, group string) (map[string]string, error) {
	cur, _, err := g.read(ctx, group)
	return cur, err
}

// Delete deletes the group's configs (when the group is deleted, as Kafka
// does). A group without configs is not an error.
func (g *GroupConfigs) Delete(ctx context.Context, group string) error {
	return g.Alter(ctx, group, func(map[string]string) (map[string]string, error) { return nil, nil })
}

// Names lists the groups that have configs (ListConfigResources).
func (g *GroupConfigs) Names(ctx context.Context) ([]string, error) {
	lister, err := g.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("controlplane: list group configs: %w", err)
	}
	var out []string
	for key := range lister.Keys() {
		if b, err := base64.RawURLEncoding.DecodeString(key); err == nil {
			out = append(out, string(b))
		}
	}
	return out, nil
}

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
	w, err := startWatch(g.nc, BucketGroupConfigs, g.mon, func(ch change) {
		b, err := base64.RawURLEncoding.DecodeString(ch.key)
		if err != nil {
			return
		}
		var v map[string]string
		if !ch.deleted && json.Unmarshal(ch.value, &v) != nil {
			return
		}
		g.remember(string(b), v, ch.rev)
	})
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.mu.watches = append(g.mu.watches, w)
	g.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("controlplane: group configs initial load: %w", ctx.Err())
	}
}

// Close stops the watches. Idempotent.
func (g *GroupConfigs) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, w := range g.mu.watches {
		w.stop()
	}
	g.mu.watches = nil
}
