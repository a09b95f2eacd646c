// Package objstore is Shale's narrow seam to object storage: put an object
// from a reader of known size, read a byte range, list by prefix, stat and
// delete. Providers (a filesystem bucket, S3) implement Bucket; cross-cutting
// behaviour (retries, metrics, key prefixes) wraps a Bucket rather than living
// in each provider. It imports no other Shale package.
package objstore

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound: the object does not exist. Providers wrap it with %w.
var ErrNotFound = errors.New("objstore: object not found")

// ErrInvalidRange: a ranged read outside the object.
var ErrInvalidRange = errors.New("objstore: invalid range")

// Attrs describe a stored object.
type Attrs struct {
	Key          string
	Size         int64
	LastModified time.Time
}

// Bucket is an object store. Keys are slash-separated paths without a leading
// slash. Implementations are safe for concurrent use.
type Bucket interface {
	// Put stores size bytes read from r under key, replacing nothing: callers
	// never overwrite an object (Shale's keys are unique), but providers need
	// not enforce it. The object is visible whole or not at all.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// GetRange returns a reader of length bytes starting at offset; length
	// -1 reads to the end. The caller closes the reader. A missing object
	// is ErrNotFound. offset must lie in [0, size] (offset == size reads
	// nothing) and length must be -1 or >= 0, else ErrInvalidRange; a range
	// running past the end is a short read, not an error (see CheckRange).
	GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)
	// List calls fn for each object whose key starts with prefix, in
	// lexical key order. Returning an error from fn stops the listing.
	List(ctx context.Context, prefix string, fn func(Attrs) error) error
	// Stat returns an object's attributes, or ErrNotFound.
	Stat(ctx context.Context, key string) (Attrs, error)
	// Delete removes an object; deleting a missing object is not an error.
	Delete(ctx context.Context, key string) error
	// Close releases the provider's resources.
	Close() error
}

// ErrTransient marks an error a retry may cure: a 5xx, throttling (429,
// 503 SlowDown), a timeout, a reset connection. Providers wrap such errors
// with it (fmt.Errorf("...: %w: %w", ErrTransient, err)); IsRetryable and
// WithRetries rely on the marker.
var ErrTransient = errors.New("objstore: transient error")

// IsRetryable reports whether err is worth retrying: it carries
// ErrTransient and is neither ErrNotFound, ErrInvalidRange nor ErrInvalidKey.
// Context cancellation and deadlines are never retryable here; WithRetries
// tells its own per-attempt timeouts apart from the caller's.
func IsRetryable(err error) bool {
	if err == nil || !errors.Is(err, ErrTransient) {
		return false
	}
	return !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrInvalidRange) && !errors.Is(err, ErrInvalidKey)
}
