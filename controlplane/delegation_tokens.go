package controlplane

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrNoDelegationToken: no token of that id (never created, expired and
// removed, or expired by its owner).
var ErrNoDelegationToken = errors.New("controlplane: no delegation token")

// ErrDelegationTokenChanged: the token changed (renewed, expired or
// removed) since the revision the caller read.
var ErrDelegationTokenChanged = errors.New("controlplane: delegation token changed meanwhile")

// DelegationToken is one delegation token (KIP-48), Kafka's
// TokenInformation with the SCRAM credentials of its HMAC. The HMAC itself
// (the token's password) is never stored: the nodes derive it from the
// token id and delegation_token_secret_key.
type DelegationToken struct {
	TokenID string `json:"token_id"`
	// Owner is the principal the token authenticates as ("User:alice");
	// Requester the one that created it (KIP-373), Renewers those, besides
	// the owner and the requester, that may renew and expire it.
	Owner     string   `json:"owner"`
	Requester string   `json:"requester"`
	Renewers  []string `json:"renewers,omitempty"`
	// IssueMs, ExpiryMs and MaxMs are Unix milliseconds: when it was
	// created, when it expires unless renewed, and when it expires at the
	// latest.
	IssueMs  int64 `json:"issue_ms"`
	ExpiryMs int64 `json:"expiry_ms"`
	MaxMs    int64 `json:"max_ms"`
	// SCRAM holds one credential per SCRAM mechanism, its User the token
	// id and its password the token's HMAC in base64.
	SCRAM []SCRAMCredential `json:"scram"`
}

// Expired reports whether t is past its expiry or its maximum at now
// (Kafka's sweep removes a token whose timestamps are below now).
func (t DelegationToken) Expired(now time.Time) bool {
	ms := now.UnixMilli()
	return t.ExpiryMs < ms || t.MaxMs < ms
}

// Credential returns t's SCRAM credential for mechanism, false if it has
// none.
func (t DelegationToken) Credential(mechanism string) (SCRAMCredential, bool) {
	for _, c := range t.SCRAM {
		if c.Mechanism == mechanism {
			return c, true
		}
	}
	return SCRAMCredential{}, false
}

// validate reports what makes t unusable.
func (t DelegationToken) validate() error {
	switch {
	case t.TokenID == "":
		return errors.New("no token id")
	case t.Owner == "" || t.Requester == "":
		return errors.New("no owner or requester")
	case t.IssueMs <= 0 || t.ExpiryMs < t.IssueMs || t.MaxMs < t.IssueMs || t.ExpiryMs > t.MaxMs:
		return fmt.Errorf("timestamps issue %d expiry %d max %d", t.IssueMs, t.ExpiryMs, t.MaxMs)
	}
	for _, c := range t.SCRAM {
		if c.User != t.TokenID || c.Mechanism == "" || len(c.Salt) == 0 || c.Iterations <= 0 || len(c.StoredKey) == 0 || len(c.ServerKey) == 0 {
			return fmt.Errorf("incomplete %s credential", c.Mechanism)
		}
	}
	return nil
}

// DecodeDelegationToken reads a stored token record, refusing one that is
// malformed or incomplete.
func DecodeDelegationToken(data []byte) (DelegationToken, error) {
	var t DelegationToken
	if err := json.Unmarshal(data, &t); err != nil {
		return DelegationToken{}, fmt.Errorf("controlplane: delegation token record: %w", err)
	}
	if err := t.validate(); err != nil {
		return DelegationToken{}, fmt.Errorf("controlplane: delegation token record %q: %w", t.TokenID, err)
	}
	return t, nil
}

// DelegationTokens is the cluster's delegation tokens in their own
// JetStream key-value bucket, one key per token. Reads go to the bucket
// each time, so a token created, renewed or expired on any node holds on
// every node at once, and across restarts. Changes are compare-and-set on
// the key's revision. Safe for concurrent use.
type DelegationTokens struct {
	kv jetstream.KeyValue
}

// OpenDelegationTokens opens (creating it if absent) the tokens bucket with
// the given number of JetStream replicas.
func OpenDelegationTokens(ctx context.Context, nc *nats.Conn, replicas int) (*DelegationTokens, error) {
	kv, err := OpenBucket(ctx, nc, jetstream.KeyValueConfig{Bucket: "shale_delegation_tokens", Replicas: replicas})
	if err != nil {
		return nil, err
	}
	return &DelegationTokens{kv: kv}, nil
}

// tokenKey is base64url(token id): a login names any id it likes, a key
// holds only a few characters.
func tokenKey(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

// Get returns the token id and its revision, or ErrNoDelegationToken. An
// expired token is returned as it is: callers decide (Expired).
func (s *DelegationTokens) Get(ctx context.Context, id string) (DelegationToken, uint64, error) {
	if id == "" {
		return DelegationToken{}, 0, fmt.Errorf("%w: empty id", ErrNoDelegationToken)
	}
	e, err := s.kv.Get(ctx, tokenKey(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return DelegationToken{}, 0, fmt.Errorf("%w: %q", ErrNoDelegationToken, id)
	}
	if err != nil {
		return DelegationToken{}, 0, fmt.Errorf("controlplane: read delegation token: %w", err)
	}
	t, err := DecodeDelegationToken(e.Value())
	if err != nil {
		return DelegationToken{}, 0, err
	}
	return t, e.Revision(), nil
}

// Create stores a new token; an existing id is an error.
func (s *DelegationTokens) Create(ctx context.Context, t DelegationToken) error {
	if err := t.validate(); err != nil {
		return fmt.Errorf("controlplane: delegation token %q: %w", t.TokenID, err)
	}
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if _, err := s.kv.Create(ctx, tokenKey(t.TokenID), data); err != nil {
		return fmt.Errorf("controlplane: create delegation token: %w", err)
	}
	return nil
}

// Update replaces the token read at revision rev, or returns
// ErrDelegationTokenChanged when it changed since.
func (s *DelegationTokens) Update(ctx context.Context, t DelegationToken, rev uint64) error {
	if err := t.validate(); err != nil {
		return fmt.Errorf("controlplane: delegation token %q: %w", t.TokenID, err)
	}
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if _, err := s.kv.Update(ctx, tokenKey(t.TokenID), data, rev); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("%w: %q", ErrDelegationTokenChanged, t.TokenID)
		}
		return fmt.Errorf("controlplane: update delegation token: %w", err)
	}
	return nil
}

// Remove deletes the token read at revision rev, or returns
// ErrDelegationTokenChanged when it changed since.
func (s *DelegationTokens) Remove(ctx context.Context, id string, rev uint64) error {
	if err := s.kv.Delete(ctx, tokenKey(id), jetstream.LastRevision(rev)); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("%w: %q", ErrDelegationTokenChanged, id)
		}
		return fmt.Errorf("controlplane: remove delegation token: %w", err)
	}
	return nil
}

// StoredDelegationToken is a token with the revision it was read at.
type StoredDelegationToken struct {
	DelegationToken
	Revision uint64
}

// List returns every token, ordered by issue time and id. A record that
// does not decode is skipped (and cannot be used to log in either).
func (s *DelegationTokens) List(ctx context.Context) ([]StoredDelegationToken, error) {
	lister, err := s.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("controlplane: list delegation tokens: %w", err)
	}
	var out []StoredDelegationToken
	for key := range lister.Keys() {
		e, err := s.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("controlplane: read delegation token: %w", err)
		}
		t, err := DecodeDelegationToken(e.Value())
		if err != nil {
			continue
		}
		out = append(out, StoredDelegationToken{DelegationToken: t, Revision: e.Revision()})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].IssueMs != out[j].IssueMs {
			return out[i].IssueMs < out[j].IssueMs
		}
		return out[i].TokenID < out[j].TokenID
	})
	return out, nil
}

// RemoveExpired deletes every token expired at now (Kafka's
// sweepExpiredDelegationTokens) and returns the ids removed. Every node
// may run it: a token renewed meanwhile keeps its newer revision.
func (s *DelegationTokens) RemoveExpired(ctx context.Context, now time.Time) ([]string, error) {
	all, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, t := range all {
		if !t.Expired(now) {
			continue
		}
		err := s.Remove(ctx, t.TokenID, t.Revision)
		if errors.Is(err, ErrDelegationTokenChanged) {
			continue
		}
		if err != nil {
			return removed, err
		}
		removed = append(removed, t.TokenID)
	}
	return removed, nil
}
