package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// The brokers being decommissioned (drained) are one key of the cluster
// bucket, drainingKey, a JSON list of broker ids: the controller's
// balancer (balancer.go) moves their leaderships and then their replicas
// away, and gives them nothing new, until they are recommissioned. The key
// outlives every process, so a drain goes on across controller changes
// and restarts of the drained node. Changes are compare-and-set on the
// key's revision: two operators cannot both start drains that each
// alone could finish but together could not.

const drainingKey = "draining"

type drainingRecord struct {
	Brokers []int32 `json:"brokers"`
}

// Draining returns the brokers being decommissioned and the revision of
// the record (0 when there is none). It reads the control plane, not the
// cache. The caller owns the map.
func (s *Store) Draining(ctx context.Context) (map[int32]bool, uint64, error) {
	if err := s.checkOpen(); err != nil {
		return nil, 0, err
	}
	e, err := s.clusterBucket.Get(ctx, drainingKey)
	if isKeyGone(err) {
		return map[int32]bool{}, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("controlplane: read the draining brokers: %w", err)
	}
	var r drainingRecord
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return nil, 0, fmt.Errorf("controlplane: draining brokers record: %w", err)
	}
	out := make(map[int32]bool, len(r.Brokers))
	for _, id := range r.Brokers {
		out[id] = true
	}
	return out, e.Revision(), nil
}

// UpdateDraining changes the set of draining brokers: change is given the
// current set (which it may modify and return) and returns the new one, or
// an error that aborts with nothing written. The write is compare-and-set
// on the record read; a lost race reads and calls change again (a few
// times, then ErrConflict). It returns the set written.
func (s *Store) UpdateDraining(ctx context.Context, change func(cur map[int32]bool) (map[int32]bool, error)) (map[int32]bool, error) {
	kv := s.clusterBucket
	for range 5 {
		cur, rev, err := s.Draining(ctx)
		if err != nil {
			return nil, err
		}
		next, err := change(maps.Clone(cur))
		if err != nil {
			return nil, err
		}
		ids := sortedIDs(next)
		data := mustJSON(drainingRecord{Brokers: ids})
		if rev == 0 {
			_, err = kv.Create(ctx, drainingKey, data)
		} else {
			_, err = kv.Update(ctx, drainingKey, data, rev)
		}
		if err == nil {
			s.log.Info("draining brokers changed", "was", sortedIDs(cur), "draining", ids)
			return next, nil
		}
		if !isWrongLastSeq(err) {
			return nil, fmt.Errorf("controlplane: write the draining brokers: %w", err)
		}
	}
	return nil, fmt.Errorf("%w: the draining brokers kept changing; retry", ErrConflict)
}

// ErrDrainImpossible wraps the reason a decommission was refused.
var ErrDrainImpossible = errors.New("controlplane: the drain cannot finish")

// Decommission adds ids to the draining brokers after checking, on the
// current partition records, that the drain of the whole new set can
// finish (CheckDrain) and that every id is registered; otherwise it
// writes nothing and returns an error saying why (ErrBrokerNotRegistered,
// or CheckDrain's ErrDrainImpossible).
func (s *Store) Decommission(ctx context.Context, ids []int32) (map[int32]bool, error) {
	for _, id := range ids {
		if !s.Registered(id) {
			return nil, fmt.Errorf("%w: broker %d", ErrBrokerNotRegistered, id)
		}
	}
	return s.UpdateDraining(ctx, func(cur map[int32]bool) (map[int32]bool, error) {
		for _, id := range ids {
			cur[id] = true
		}
		var parts []PartitionState
		for _, t := range s.Topics() {
			parts = append(parts, s.Partitions(t.Name)...)
		}
		if err := CheckDrain(parts, s.Brokers(), cur); err != nil {
			return nil, err
		}
		return cur, nil
	})
}

// Recommission removes ids from the draining brokers: the balancer may
// place replicas on them again. Ids not draining are ignored.
func (s *Store) Recommission(ctx context.Context, ids []int32) (map[int32]bool, error) {
	return s.UpdateDraining(ctx, func(cur map[int32]bool) (map[int32]bool, error) {
		for _, id := range ids {
			delete(cur, id)
		}
		return cur, nil
	})
}

// DrainingIDs lists a draining set, sorted.
func DrainingIDs(m map[int32]bool) []int32 { return slices.Clip(sortedIDs(m)) }
