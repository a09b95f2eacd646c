package controlplane

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrNoSCRAMCredential: the user has no credential of that mechanism.
var ErrNoSCRAMCredential = errors.New("controlplane: no SCRAM credential")

// SCRAMCredential is one user's salted SCRAM credential for one mechanism
// (SCRAM-SHA-256 or SCRAM-SHA-512), RFC 5802's stored form: the password
// is never stored, only the salt, the iteration count and the keys derived
// from the salted password.
type SCRAMCredential struct {
	User       string `json:"user"`
	Mechanism  string `json:"mechanism"`
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// SCRAMCredentials is the cluster's SCRAM credentials in their own
// JetStream key-value bucket, one key per user and mechanism. Reads go to
// the bucket each time (a login is rare next to requests), so a change made
// on any node holds on every node at once. Safe for concurrent use.
type SCRAMCredentials struct {
	kv jetstream.KeyValue
}

// OpenSCRAMCredentials opens (creating it if absent) the credentials bucket
// with the given number of JetStream replicas.
func OpenSCRAMCredentials(ctx context.Context, nc *nats.Conn, replicas int) (*SCRAMCredentials, error) {
	kv, err := OpenBucket(ctx, nc, jetstream.KeyValueConfig{Bucket: "shale_scram_credentials", Replicas: replicas})
	if err != nil {
		return nil, err
	}
	return &SCRAMCredentials{kv: kv}, nil
}

// scramKey is mechanism "." base64url(user): a user name may hold any
// character, a key only a few.
func scramKey(mechanism, user string) string {
	return mechanism + "." + base64.RawURLEncoding.EncodeToString([]byte(user))
}

// Get returns user's credential for mechanism, or ErrNoSCRAMCredential.
func (s *SCRAMCredentials) Get(ctx context.Context, mechanism, user string) (SCRAMCredential, error) {
	e, err := s.kv.Get(ctx, scramKey(mechanism, user))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return SCRAMCredential{}, fmt.Errorf("%w: %s for %q", ErrNoSCRAMCredential, mechanism, user)
	}
	if err != nil {
		return SCRAMCredential{}, fmt.Errorf("controlplane: read SCRAM credential: %w", err)
	}
	var c SCRAMCredential
	if err := json.Unmarshal(e.Value(), &c); err != nil {
		return SCRAMCredential{}, fmt.Errorf("controlplane: SCRAM credential %s: %w", e.Key(), err)
	}
	return c, nil
}

// Put creates or replaces c.User's credential for c.Mechanism.
func (s *SCRAMCredentials) Put(ctx context.Context, c SCRAMCredential) error {
	if c.User == "" || c.Mechanism == "" || len(c.Salt) == 0 || c.Iterations <= 0 || len(c.StoredKey) == 0 || len(c.ServerKey) == 0 {
		return fmt.Errorf("controlplane: incomplete SCRAM credential for %q", c.User)
	}
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if _, err := s.kv.Put(ctx, scramKey(c.Mechanism, c.User), data); err != nil {
		return fmt.Errorf("controlplane: write SCRAM credential: %w", err)
	}
	return nil
}

// Delete removes user's credential for mechanism, or returns
// ErrNoSCRAMCredential when there is none.
func (s *SCRAMCredentials) Delete(ctx context.Context, mechanism, user string) error {
	if _, err := s.Get(ctx, mechanism, user); err != nil {
		return err
	}
	if err := s.kv.Delete(ctx, scramKey(mechanism, user)); err != nil {
		return fmt.Errorf("controlplane: delete SCRAM credential: %w", err)
	}
	return nil
}

// List returns every credential, ordered by user and mechanism.
func (s *SCRAMCredentials) List(ctx context.Context) ([]SCRAMCredential, error) {
	lister, err := s.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("controlplane: list SCRAM credentials: %w", err)
	}
	var out []SCRAMCredential
	for key := range lister.Keys() {
		mech, enc, ok := strings.Cut(key, ".")
		user, derr := base64.RawURLEncoding.DecodeString(enc)
		if !ok || derr != nil {
			continue
		}
		c, err := s.Get(ctx, mech, string(user))
		if errors.Is(err, ErrNoSCRAMCredential) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].User != out[j].User {
			return out[i].User < out[j].User
		}
		return out[i].Mechanism < out[j].Mechanism
	})
	return out, nil
}
