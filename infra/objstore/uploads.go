package objstore

import (
	"context"
	"strings"
	"time"
)

// UploadAborter is implemented by providers that keep the parts of
// incomplete multipart uploads (S3): an upload cut off by a crash leaves
// parts that cost storage, invisible to List, until aborted.
type UploadAborter interface {
	// AbortIncompleteMultipartUploads aborts the incomplete uploads
	// initiated more than olderThan ago whose key keep (when not nil)
	// does not claim, and returns how many it aborted.
	AbortIncompleteMultipartUploads(ctx context.Context, olderThan time.Duration, keep func(key string) bool) (int, error)
}

// Unwrapper is implemented by wrappers (WithRetries, WithMetrics) to give
// the bucket they wrap.
type Unwrapper interface {
	Unwrap() Bucket
}

// AbortIncompleteUploads aborts b's abandoned multipart uploads as
// UploadAborter does, looking through wrappers for a provider that keeps
// them; supported is false when none does (the filesystem bucket writes
// whole objects only).
func AbortIncompleteUploads(ctx context.Context, b Bucket, olderThan time.Duration, keep func(key string) bool) (aborted int, supported bool, err error) {
	for b != nil {
		if a, ok := b.(UploadAborter); ok {
			n, err := a.AbortIncompleteMultipartUploads(ctx, olderThan, keep)
			return n, true, err
		}
		u, ok := b.(Unwrapper)
		if !ok {
			break
		}
		b = u.Unwrap()
	}
	return 0, false, nil
}

func (r *retrying) Unwrap() Bucket { return r.b }
func (w *metered) Unwrap() Bucket  { return w.b }

// AbortIncompleteMultipartUploads passes through to the wrapped bucket,
// showing keep the keys without the prefix and keeping every upload outside
// it.
func (p *prefixed) AbortIncompleteMultipartUploads(ctx context.Context, olderThan time.Duration, keep func(key string) bool) (int, error) {
	n, _, err := AbortIncompleteUploads(ctx, p.b, olderThan, func(key string) bool {
		k, ok := strings.CutPrefix(key, p.prefix)
		return !ok || (keep != nil && keep(k))
	})
	return n, err
}
