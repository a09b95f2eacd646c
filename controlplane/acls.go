package controlplane

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/shale-io/shale/authz/acl"
)

// BucketACLs holds the cluster's ACLs, one key per binding.
const BucketACLs = "shale_acls"

// ACLs is the cluster's ACL bindings in the shale_acls bucket, watched:
// every node holds the whole set in memory and hands a new acl.Set to its
// authorizer within a moment of a change on any node (the watch's delivery,
// milliseconds on a healthy NATS). A node's own Create and Delete apply to
// its view before they return, so DescribeAcls on the node that changed
// them sees the change at once. Safe for concurrent use.
type ACLs struct {
	kv       jetstream.KeyValue
	watch    *bucketWatch
	onChange func(*acl.Set)

	closeOnce sync.Once

	mu struct {
		sync.Mutex
		byKey  map[string]aclEntry
		loaded bool     // the initial values are in; changes publish
		set    *acl.Set // what was last handed to onChange
	}
}

// aclEntry is one key's latest known state; a deletion is kept as a
// tombstone so that an older value delivered late is ignored.
type aclEntry struct {
	rev     uint64
	deleted bool
	b       acl.Binding
}

// OpenACLs creates the bucket if absent, starts its watch, waits for the
// current bindings and calls onChange with them; afterwards onChange is
// called with the whole new set after each change, from the watch's
// goroutine or from Create and Delete (serialised: one call at a time, in
// order). ctx bounds the open only. Close the ACLs before the Store.
func OpenACLs(ctx context.Context, s *Store, onChange func(*acl.Set)) (*ACLs, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	kv, err := OpenBucket(ctx, s.nc, jetstream.KeyValueConfig{Bucket: BucketACLs, Description: "Shale ACLs", Replicas: s.cfg.Replicas})
	if err != nil {
		return nil, err
	}
	a := &ACLs{kv: kv, onChange: onChange}
	a.mu.byKey = map[string]aclEntry{}
	a.watch, err = startWatch(s.js.Conn(), BucketACLs, s.cfg.Monitor, a.apply)
	if err != nil {
		return nil, err
	}
	select {
	case <-a.watch.ready:
	case <-ctx.Done():
		a.Close()
		return nil, fmt.Errorf("controlplane: ACLs initial load: %w", ctx.Err())
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mu.loaded = true
	a.publishLocked()
	return a, nil
}

// Close stops the watch. Idempotent; Set stays readable.
func (a *ACLs) Close() { a.closeOnce.Do(func() { a.watch.stop() }) }

// aclKey is a binding's key: a hash of its fields, so that creating a
// binding twice stores it once.
func aclKey(b acl.Binding) string {
	data, _ := json.Marshal(b)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:20])
}

func (a *ACLs) apply(ch change) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.applyLocked(ch)
}

// REQUIRES: a.mu held.
func (a *ACLs) applyLocked(ch change) {
	if old, ok := a.mu.byKey[ch.key]; ok && old.rev >= ch.rev {
		return
	}
	e := aclEntry{rev: ch.rev, deleted: ch.deleted}
	if !ch.deleted {
		if err := json.Unmarshal(ch.value, &e.b); err != nil || e.b.Validate() != nil {
			return // not a binding this node can read: it allows nothing
		}
	}
	a.mu.byKey[ch.key] = e
	if a.mu.loaded {
		a.publishLocked()
	}
}

// REQUIRES: a.mu held.
func (a *ACLs) publishLocked() {
	var bs []acl.Binding
	for _, e := range a.mu.byKey {
		if !e.deleted {
			bs = append(bs, e.b)
		}
	}
	slices.SortFunc(bs, compareBindings)
	a.mu.set = acl.NewSet(bs)
	if a.onChange != nil {
		a.onChange(a.mu.set)
	}
}

func compareBindings(x, y acl.Binding) int {
	return cmp.Or(cmp.Compare(x.ResourceType, y.ResourceType), strings.Compare(x.ResourceName, y.ResourceName),
		cmp.Compare(x.PatternType, y.PatternType), strings.Compare(x.Principal, y.Principal),
		strings.Compare(x.Host, y.Host), cmp.Compare(x.Operation, y.Operation), cmp.Compare(x.Permission, y.Permission))
}

// Set returns the bindings as this node knows them, ordered by resource,
// pattern, principal, host, operation and permission.
func (a *ACLs) Set() *acl.Set {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mu.set
}

// Create stores b (valid, see acl.Binding.Validate); a binding already
// stored is left as it is.
func (a *ACLs) Create(ctx context.Context, b acl.Binding) error {
	if err := b.Validate(); err != nil {
		return err
	}
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	key := aclKey(b)
	rev, err := a.kv.Put(ctx, key, data)
	if err != nil {
		return fmt.Errorf("controlplane: write ACL: %w", err)
	}
	a.apply(change{key: key, rev: rev, value: data})
	return nil
}

// Delete removes every binding f matches in this node's view and returns
// them, ordered as Set. A failure part way leaves the bindings deleted so
// far deleted; the returned error says so.
func (a *ACLs) Delete(ctx context.Context, f acl.Filter) ([]acl.Binding, error) {
	a.mu.Lock()
	type victim struct {
		key string
		e   aclEntry
	}
	var victims []victim
	for k, e := range a.mu.byKey {
		if !e.deleted && f.Matches(e.b) {
			victims = append(victims, victim{k, e})
		}
	}
	a.mu.Unlock()
	slices.SortFunc(victims, func(x, y victim) int { return compareBindings(x.e.b, y.e.b) })
	var out []acl.Binding
	for _, v := range victims {
		if err := a.kv.Delete(ctx, v.key); err != nil {
			return out, fmt.Errorf("controlplane: delete ACL (%d of %d deleted): %w", len(out), len(victims), err)
		}
		// The delete's own revision is not returned; it is above v.e.rev,
		// and the watch delivers it later (a no-op then).
		a.apply(change{key: v.key, rev: v.e.rev + 1, deleted: true})
		out = append(out, v.e.b)
	}
	return out, nil
}
