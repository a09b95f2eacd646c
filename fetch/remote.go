package fetch

import (
	"context"
	"time"

	"github.com/shale-io/shale/authz"
	"github.com/shale-io/shale/partition"
)

// RemoteReader serves reads of a partition's remote (tiered) segments
// (tiering/coldread.Reader). Fetch and ListOffsets consult it for offsets
// below the local log start; with none, the read path is local only.
// Implementations are safe for concurrent use.
type RemoteReader interface {
	// LogStartOffset is the first offset held in remote segments, or -1
	// when the partition has no remote data. Answers from memory.
	LogStartOffset(topic string, partition int32) int64
	// LastTieredOffset is the last offset (inclusive) held in remote
	// segments, or -1 when there is none (ListOffsets LATEST_TIERED).
	// Answers from memory.
	LastTieredOffset(topic string, partition int32) int64
	// Read returns whole record batches starting at the batch containing
	// offset, at most maxBytes (at least one batch if minOne), from remote
	// segments; nextOffset is the offset after the last returned batch.
	// The caller owns batches. An offset below the remote log start wraps
	// segment.ErrOffsetOutOfRange; when ctx ends first, its error.
	Read(ctx context.Context, topic string, partition int32, offset int64, maxBytes int, minOne bool) (batches []byte, nextOffset int64, err error)
	// OffsetForTimestamp returns the first remote record whose timestamp
	// is >= ts; ok is false when no remote record qualifies.
	OffsetForTimestamp(ctx context.Context, topic string, partition int32, ts int64) (offset, timestamp int64, ok bool, err error)
	// MaxTimestamp is the largest record timestamp in remote segments; ok
	// is false when there is no remote data. Answers from memory.
	MaxTimestamp(topic string, partition int32) (ts int64, ok bool)
}

// Option configures RegisterFetch and RegisterListOffsets.
type Option func(*options)

type options struct {
	remote        RemoteReader
	remoteMinWait time.Duration
	quotas        Quotas              // nil: no quotas
	authz         *authz.Authorizer   // nil: everything allowed
	sessions      *SessionCache       // nil: no fetch sessions
	directory     partition.Directory // nil: Fetch up to v12
	local         LocalReplicas       // nil: consumers are served by leaders only
	selector      *rackSelector       // nil: no preferred read replica is named
}

// WithAuthorizer has the handlers check the ACLs with a (Fetch: Read on
// each topic, or ClusterAction for a follower; ListOffsets and
// OffsetForLeaderEpoch: Describe). Without it everything is allowed.
func WithAuthorizer(a *authz.Authorizer) Option {
	return func(o *options) { o.authz = a }
}

// DefaultRemoteMinWait is how long a fetch waits at least for remote reads
// when the client's max_wait_ms is shorter (Kafka's
// remote.fetch.max.wait.ms default).
const DefaultRemoteMinWait = 500 * time.Millisecond

// listOffsetsRemoteTimeout bounds a ListOffsets timestamp lookup on remote
// segments.
const listOffsetsRemoteTimeout = 15 * time.Second

func buildOptions(opts []Option) options {
	o := options{remoteMinWait: DefaultRemoteMinWait}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithRemote serves offsets below the local log start from r. A nil r
// leaves the read path local only.
func WithRemote(r RemoteReader) Option {
	return func(o *options) { o.remote = r }
}

// WithRemoteMinWait sets how long a fetch that needs remote data waits for
// it at least, whatever its max_wait_ms (default DefaultRemoteMinWait). A
// remote read still unfinished then answers REQUEST_TIMED_OUT for its
// partition; the read completes in the background and fills the cache for
// the client's retry.
func WithRemoteMinWait(d time.Duration) Option {
	return func(o *options) { o.remoteMinWait = d }
}
