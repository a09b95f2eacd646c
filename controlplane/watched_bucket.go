package controlplane

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// watchedBucket is a settings bucket of its own that every node watches:
// the client metrics subscriptions, the client quotas, the finalized
// features and the group configs. It opens the bucket, starts the watches
// (each decoding changes its owner's way) and waits for their initial
// load, and stops them all on Close; alterJSON and getJSON read and write
// one key's JSON map. Each owner keeps its own keys, values and
// validation. Safe for concurrent use.
type watchedBucket struct {
	kv   jetstream.KeyValue
	nc   *nats.Conn
	mon  *ConnMonitor
	name string // the bucket
	what string // what it holds, in errors: "client metrics"

	watchMu sync.Mutex
	watches []*bucketWatch // REQUIRES: watchMu held
}

// openWatchedBucket opens (creating it if absent) the bucket cfg names.
// mon counts and logs the re-establishments of its watches (nil: not
// counted, logged to slog.Default).
func openWatchedBucket(ctx context.Context, nc *nats.Conn, cfg jetstream.KeyValueConfig, what string, mon *ConnMonitor) (*watchedBucket, error) {
	kv, err := OpenBucket(ctx, nc, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &watchedBucket{kv: kv, nc: nc, mon: mon, name: cfg.Bucket, what: what}, nil
}

// watch calls apply with every entry the bucket holds, then with every
// change, from one goroutine, in revision order, until Close. It returns
// once the current entries have been applied, or when ctx ends first.
func (b *watchedBucket) watch(ctx context.Context, apply func(change)) error {
	w, err := startWatch(b.nc, b.name, b.mon, apply)
	if err != nil {
		return err
	}
	b.watchMu.Lock()
	b.watches = append(b.watches, w)
	b.watchMu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("controlplane: %s initial load: %w", b.what, ctx.Err())
	}
}

// Close stops the watches. Idempotent.
func (b *watchedBucket) Close() {
	b.watchMu.Lock()
	defer b.watchMu.Unlock()
	for _, w := range b.watches {
		w.stop()
	}
	b.watches = nil
}

// nameKey is a name (a subscription's, a group's) as a key: base64url,
// since a name may hold any character and keys only a few.
func nameKey(name string) string { return base64.RawURLEncoding.EncodeToString([]byte(name)) }

// names lists the names of the bucket's keys, each a nameKey; a key that
// is not one is left out.
func (b *watchedBucket) names(ctx context.Context) ([]string, error) {
	lister, err := b.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("controlplane: list %s: %w", b.what, err)
	}
	var out []string
	for key := range lister.Keys() {
		if n, err := base64.RawURLEncoding.DecodeString(key); err == nil {
			out = append(out, string(n))
		}
	}
	return out, nil
}

// changedJSON decodes a change's value, a JSON map: nil for a delete, and
// ok false for a value that does not decode (the watch skips it).
func changedJSON[M any](ch change) (v M, ok bool) {
	if ch.deleted {
		return v, true
	}
	return v, json.Unmarshal(ch.value, &v) == nil
}

// getJSON reads key's JSON map and its revision: nil and 0 when the key is
// absent. what names the entry in errors (`client metrics "x"`).
func getJSON[M ~map[K]V, K comparable, V any](ctx context.Context, kv jetstream.KeyValue, key, what string) (M, uint64, error) {
	entry, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("controlplane: read %s: %w", what, err)
	}
	cur := M{}
	if err := json.Unmarshal(entry.Value(), &cur); err != nil {
		return nil, 0, fmt.Errorf("controlplane: %s: %w", what, err)
	}
	return cur, entry.Revision(), nil
}

// alterJSON applies change to key's JSON map by compare-and-set: change
// gets a copy of the stored map (empty when the key is absent) and returns
// the new one, or an error that alterJSON returns unchanged, writing
// nothing. With deleteEmpty an empty new map deletes the key (and is
// nothing to do when the key is absent); without, it is stored as {}. It
// retries a lost race up to 20 times, and returns the map it wrote and its
// revision: for a delete, the revision read plus one (the delete's own is
// not returned, and no write of this key lies between them); 0 when it
// wrote nothing. what names the entry in errors.
func alterJSON[M ~map[K]V, K comparable, V any](ctx context.Context, kv jetstream.KeyValue, key, what string, deleteEmpty bool, change func(M) (M, error)) (M, uint64, error) {
	for range 20 {
		cur, rev, err := getJSON[M](ctx, kv, key, what)
		if err != nil {
			return nil, 0, err
		}
		if cur == nil {
			cur = M{}
		}
		next, err := change(cur)
		if err != nil {
			return nil, 0, err
		}
		var newRev uint64
		switch {
		case deleteEmpty && len(next) == 0 && rev == 0:
			return next, 0, nil
		case deleteEmpty && len(next) == 0:
			err, newRev = kv.Delete(ctx, key, jetstream.LastRevision(rev)), rev+1
		default:
			data, merr := json.Marshal(next)
			if merr != nil {
				return nil, 0, merr
			}
			if rev == 0 {
				newRev, err = kv.Create(ctx, key, data)
			} else {
				newRev, err = kv.Update(ctx, key, data, rev)
			}
		}
		if err == nil {
			return next, newRev, nil
		}
		if !isWrongLastSeq(err) {
			return nil, 0, fmt.Errorf("controlplane: write %s: %w", what, err)
		}
	}
	return nil, 0, fmt.Errorf("controlplane: write %s: lost 20 races", what)
}
