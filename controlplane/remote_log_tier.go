package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// coldTierKeyPrefix starts the key of each broker's cold-tier record in
// shale_remote_segments ("_tier.<node id>"). Segment keys start with a topic
// id in hex, never with '_'.
const coldTierKeyPrefix = "_tier."

// ColdTier is what one broker says about the bucket it tiers to, so that
// brokers sharing this metadata can tell whether they share the bucket too.
type ColdTier struct {
	NodeID int32 `json:"node_id"`
	// Shared: the bucket is one every broker can reach (S3); false for the
	// filesystem bucket under the broker's own data directory.
	Shared bool `json:"shared"`
	// Location names the bucket: "s3://<bucket>" for S3, the filesystem
	// bucket's path otherwise (for the error message only).
	Location  string    `json:"location"`
	UpdatedAt time.Time `json:"updated_at"`
}

func coldTierKey(node int32) string { return coldTierKeyPrefix + strconv.Itoa(int(node)) }

// PutColdTier records (or replaces) this broker's cold-tier record.
func (rl *RemoteLog) PutColdTier(ctx context.Context, t ColdTier) error {
	if err := rl.store.checkOpen(); err != nil {
		return err
	}
	t.UpdatedAt = time.Now().UTC()
	data := mustJSON(t)
	key := coldTierKey(t.NodeID)
	rev, err := rl.kv.Put(ctx, key, data)
	if err != nil {
		return fmt.Errorf("controlplane: write cold tier record %s: %w", key, err)
	}
	rl.apply(change{key: key, rev: rev, value: data})
	return nil
}

// ColdTiers returns every broker's cold-tier record, by node id, from the
// cache. The caller owns the result.
func (rl *RemoteLog) ColdTiers() []ColdTier {
	rl.mu.RLock()
	defer rl.mu.RUnlock()
	var out []ColdTier
	for _, e := range rl.mu.tiers {
		if !e.deleted {
			out = append(out, e.val)
		}
	}
	slices.SortFunc(out, func(a, b ColdTier) int { return int(a.NodeID) - int(b.NodeID) })
	return out
}

// applyColdTier is apply for a "_tier." key.
func (rl *RemoteLog) applyColdTier(ch change) {
	node, err := strconv.Atoi(strings.TrimPrefix(ch.key, coldTierKeyPrefix))
	if err != nil {
		rl.log.Warn("ignoring cold tier key", "key", ch.key, "err", err)
		return
	}
	var t ColdTier
	if !ch.deleted {
		if err := json.Unmarshal(ch.value, &t); err != nil {
			rl.log.Warn("ignoring cold tier value", "key", ch.key, "err", err)
			return
		}
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if cur := rl.mu.tiers[int32(node)]; cur != nil && ch.rev <= cur.rev {
		return
	}
	rl.mu.tiers[int32(node)] = &entry[ColdTier]{val: t, rev: ch.rev, deleted: ch.deleted}
}

// DeleteColdTier removes node's cold-tier record (a broker that refused to
// start withdraws its own).
func (rl *RemoteLog) DeleteColdTier(ctx context.Context, node int32) error {
	if err := rl.store.checkOpen(); err != nil {
		return err
	}
	key := coldTierKey(node)
	if err := rl.kv.Delete(ctx, key); err != nil {
		return fmt.Errorf("controlplane: delete cold tier record %s: %w", key, err)
	}
	rl.mu.Lock()
	if cur := rl.mu.tiers[node]; cur != nil {
		cur.deleted = true
	}
	rl.mu.Unlock()
	return nil
}
