package controlplane

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shale-io/shale/quota"
)

// BucketClientQuotas holds the client quotas, one key per entity.
const BucketClientQuotas = "shale_client_quotas"

// ClientQuotas is the cluster's client quota configurations (Kafka's
// /config/users and /config/clients) in their own JetStream key-value
// bucket, one key per entity holding its values as JSON. Every node
// watches the bucket (Watch) and enforces what it holds; writes go to the
// bucket by compare-and-set, so concurrent alterations of one entity on
// different nodes both apply. Safe for concurrent use.
type ClientQuotas struct {
	*watchedBucket
}

// OpenClientQuotas opens (creating it if absent) the client quota bucket
// with the given number of JetStream replicas. mon counts and logs the
// re-establishments of its watches (nil: not counted, logged to
// slog.Default).
func OpenClientQuotas(ctx context.Context, nc *nats.Conn, replicas int, mon *ConnMonitor) (*ClientQuotas, error) {
	b, err := openWatchedBucket(ctx, nc, jetstream.KeyValueConfig{Bucket: BucketClientQuotas, Replicas: replicas,
		Description: "Shale client quotas"}, "client quotas", mon)
	if err != nil {
		return nil, err
	}
	return &ClientQuotas{b}, nil
}

// quotaKey encodes an entity as a key: "user.<n>", "client.<n>" or both,
// <n> being "=" for the default and "N" and the base64url of a name
// otherwise (names may hold any character, keys only a few, and "" is a
// client id distinct from the default).
func quotaKey(e quota.Entity) string {
	enc := func(n quota.Name) string {
		if n.Default {
			return "="
		}
		return "N" + base64.RawURLEncoding.EncodeToString([]byte(n.Name))
	}
	var parts []string
	if e.User.Set {
		parts = append(parts, "user", enc(e.User))
	}
	if e.ClientID.Set {
		parts = append(parts, "client", enc(e.ClientID))
	}
	return strings.Join(parts, ".")
}

func parseQuotaKey(key string) (quota.Entity, error) {
	parts := strings.Split(key, ".")
	var e quota.Entity
	if len(parts) != 2 && len(parts) != 4 {
		return e, fmt.Errorf("controlplane: client quota key %q", key)
	}
	for i := 0; i < len(parts); i += 2 {
		var n quota.Name
		switch v := parts[i+1]; {
		case v == "=":
			n = quota.DefaultName()
		case strings.HasPrefix(v, "N"):
			b, err := base64.RawURLEncoding.DecodeString(v[1:])
			if err != nil {
				return e, fmt.Errorf("controlplane: client quota key %q: %w", key, err)
			}
			n = quota.Named(string(b))
		default:
			return e, fmt.Errorf("controlplane: client quota key %q", key)
		}
		switch {
		case parts[i] == "user" && i == 0:
			e.User = n
		case parts[i] == "client" && !e.ClientID.Set:
			e.ClientID = n
		default:
			return e, fmt.Errorf("controlplane: client quota key %q", key)
		}
	}
	return e, nil
}

// Alter applies change to e's values by compare-and-set: change gets a
// copy of the current values (empty when e has none) and returns the new
// ones; empty new values delete e. It retries a lost race up to 20 times.
func (q *ClientQuotas) Alter(ctx context.Context, e quota.Entity, change func(quota.Values) quota.Values) error {
	if err := e.Validate(); err != nil {
		return err
	}
	_, _, err := alterJSON(ctx, q.kv, quotaKey(e), fmt.Sprintf("client quota %s", e), true,
		func(cur quota.Values) (quota.Values, error) { return change(cur), nil })
	return err
}

// List returns every entity's values.
func (q *ClientQuotas) List(ctx context.Context) (map[quota.Entity]quota.Values, error) {
	lister, err := q.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("controlplane: list client quotas: %w", err)
	}
	out := map[quota.Entity]quota.Values{}
	for key := range lister.Keys() {
		e, err := parseQuotaKey(key)
		if err != nil {
			continue
		}
		v, rev, err := getJSON[quota.Values](ctx, q.kv, key, fmt.Sprintf("client quota %s", e))
		if err != nil {
			return nil, err
		}
		if rev == 0 {
			continue // deleted meanwhile
		}
		out[e] = v
	}
	return out, nil
}

// Watch calls apply with each entity's values as the bucket holds them,
// then with every change (nil values for a deleted entity), from one
// goroutine, in revision order, until Close. It returns once the current
// values have been applied, or when ctx ends first.
func (q *ClientQuotas) Watch(ctx context.Context, apply func(quota.Entity, quota.Values)) error {
	return q.watch(ctx, func(ch change) {
		e, err := parseQuotaKey(ch.key)
		if err != nil {
			return
		}
		if v, ok := changedJSON[quota.Values](ch); ok {
			apply(e, v)
		}
	})
}
