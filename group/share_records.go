package group

// The __consumer_offsets records of KIP-932 share groups (Kafka 4's key
// versions 9-15: ShareGroupPartitionMetadata, ShareGroupMemberMetadata,
// ShareGroupMetadata, ShareGroupTargetAssignmentMetadata,
// ShareGroupTargetAssignmentMember, ShareGroupCurrentMemberAssignment,
// ShareGroupStatePartitionMetadata). Package share owns the share group
// state and encodes and decodes their values; the group coordinator, which
// owns the log, reads only their keys (group and, for versions 10, 13 and
// 14, member), keeps the live record per key of each group, hands them to
// the share coordinator when it loads a partition (ShareGroups), rewrites
// them at compaction, and appends what the share coordinator writes
// (AppendShareRecords). A group holding them is a share group: ListGroups
// lists it through ShareGroups, not as a classic group.

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The share group key versions.
const (
	keyShareFirst   = 9
	keyShareMember  = 10 // ShareGroupMemberMetadataKey
	keyShareTarget  = 13 // ShareGroupTargetAssignmentMemberKey
	keyShareCurrent = 14 // ShareGroupCurrentMemberAssignmentKey
	keyShareLast    = 15
	kindShare       = recordKind(40)
)

// ShareRecord is one share group record of __consumer_offsets: its key
// and value as package share encodes them (a nil value is a tombstone).
type ShareRecord struct{ Key, Value []byte }

// decodeShareKey decodes a share group key (b[0:2] is version, one of
// 9-15).
func decodeShareKey(version int16, b []byte) (decodedKey, error) {
	r := kbin.Reader{Src: b[2:]}
	k := decodedKey{kind: kindShare, group: r.String()}
	switch version {
	case keyShareMember, keyShareTarget, keyShareCurrent:
		k.member = r.String()
	}
	if err := r.Complete(); err != nil {
		return decodedKey{}, fmt.Errorf("%w: share group key v%d: %v", ErrCorruptRecord, version, err)
	}
	return k, nil
}

// hasOtherType reports whether g holds classic or consumer group state:
// members, a generation, offsets or a consumer group.
func (g *group) hasOtherType() bool {
	return g.consumer != nil || len(g.members) > 0 || len(g.pending) > 0 || g.generation > 0 ||
		len(g.offsets) > 0 || len(g.unreplicated) > 0 || len(g.pendingTxn) > 0
}

// isShare reports whether g is a share group: it holds share group records
// and is neither a consumer group nor a classic group with members or
// offsets.
func (g *group) isShare() bool { return len(g.share) > 0 && !g.hasOtherType() }

// shareRecords is g's live share group records, in key order.
func (g *group) shareRecords() []record {
	recs := make([]record, 0, len(g.share))
	for _, k := range slices.Sorted(maps.Keys(g.share)) {
		recs = append(recs, record{key: []byte(k), value: g.share[k]})
	}
	return recs
}

// applyShare keeps recs as g's live share records (a tombstone deletes).
func (g *group) applyShare(recs []record) {
	if g.share == nil {
		g.share = map[string][]byte{}
	}
	for _, r := range recs {
		if r.value == nil {
			delete(g.share, string(r.key))
		} else {
			g.share[string(r.key)] = r.value
		}
	}
}

// AppendShareRecords appends recs (share group records of group id, as
// package share encodes them) to the group's __consumer_offsets partition
// as one batch and returns once they are committed; the group keeps them
// as its live share state, for compaction and the next load. A record whose
// key is not a share group key of id is refused. The errors are the
// coordinator runtime's: ErrNotCoordinator, ErrLoadInProgress,
// ErrCoordinatorNotAvailable (not committed in time); and ErrNotShareGroup
// when id is a classic or consumer group.
func (c *Coordinator) AppendShareRecords(ctx context.Context, id string, recs []ShareRecord) error {
	if len(recs) == 0 {
		return nil
	}
	out := make([]record, len(recs))
	for i, r := range recs {
		k, err := decodeKey(r.Key)
		if err != nil || k.kind != kindShare || k.group != id {
			return fmt.Errorf("%w: not a share group key of %q", ErrCorruptRecord, id)
		}
		out[i] = record{key: r.Key, value: r.Value}
	}
	rn, err := c.lookup(id, true)
	if err != nil {
		return err
	}
	var perr error
	gone := false
	_, err = c.call(ctx, rn, func(g *group, send replyFn) {
		if g.hasOtherType() {
			perr = fmt.Errorf("%w: %q", ErrNotShareGroup, id)
			send(nil, -1)
			return
		}
		hw, err := g.persist(out)
		if err != nil {
			perr = err
			send(nil, -1)
			return
		}
		// Kept at once, as the consumer group records are: a snapshot
		// for compaction appended after them replicates them, and a
		// shard whose append is lost unloads.
		g.applyShare(out)
		send(nil, hw)
	}, func() kmsg.Response { gone = true; return nil })
	switch {
	case err != nil:
		return err
	case perr != nil:
		return perr
	case gone:
		return fmt.Errorf("%w: share group %q not committed", ErrCoordinatorNotAvailable, id)
	}
	return nil
}

// holdsShareGroup reports whether rn's group is a share group.
func (c *Coordinator) holdsShareGroup(ctx context.Context, rn *runner) bool {
	is := false
	_, _ = c.call(ctx, rn, func(g *group, send replyFn) {
		is = g.isShare()
		send(nil, -1)
	}, func() kmsg.Response { return nil })
	return is
}

// ShareReady is nil when this node coordinates group id and its offsets
// partition is loaded (the share groups it held were handed to
// ShareGroups.LoadShareGroups); else ErrNotCoordinator or
// ErrLoadInProgress.
func (c *Coordinator) ShareReady(id string) error {
	_, err := c.lookup(id, false)
	return err
}
