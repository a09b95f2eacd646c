package objstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"
)

// Probe proves that b can be written, read and deleted: it puts a small
// object under key, reads it back, compares it and deletes it, the least
// that shows a bucket exists and the credentials may do what Shale does
// with it. The error names the step that failed and wraps the provider's
// (so an S3 error code such as NoSuchBucket or InvalidAccessKeyId shows).
// A probe object left by a crash between the put and the delete is
// replaced by the next probe with the same key.
func Probe(ctx context.Context, b Bucket, key string) error {
	body := fmt.Appendf(nil, "shale bucket probe %s\n", time.Now().UTC().Format(time.RFC3339Nano))
	if err := b.Put(ctx, key, bytes.NewReader(body), int64(len(body))); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	rc, err := b.GetRange(ctx, key, 0, -1)
	if err != nil {
		return fmt.Errorf("read %s back: %w", key, err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return fmt.Errorf("read %s back: %w", key, err)
	}
	if !bytes.Equal(got, body) {
		return fmt.Errorf("read %s back: %d bytes that differ from the %d written", key, len(got), len(body))
	}
	if err := b.Delete(ctx, key); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}
