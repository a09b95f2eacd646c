package s3bucket_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/infra/objstore/fsbucket"
	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/infra/objstore/s3bucket"
)

type nopSink struct{}

func (nopSink) Observe(string, int64, time.Duration, error) {}

// objstore.AbortIncompleteUploads reaches the S3 provider through the
// wrappers the node stacks on it; WithPrefix shows keep its own keys and
// never aborts outside its prefix; the filesystem bucket has nothing to abort.
func TestAbortIncompleteUploadsThroughWrappers(t *testing.T) {
	srv := objstoretest.StartS3Server(t)
	var bucketName string
	raw := newBucket(t, srv, func(c *s3bucket.Config) { bucketName = c.Bucket })
	defer raw.Close()
	ctx := objstoretest.Ctx(t)
	for _, key := range []string{"shale/live.log", "shale/cut.log", "other/x.log"} {
		if _, err := raw.Client().CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucketName), Key: aws.String(key)}); err != nil {
			t.Fatal(err)
		}
	}
	b := objstore.WithPrefix(objstore.WithMetrics(objstore.WithRetries(raw, objstore.RetryConfig{}), nopSink{}), "shale")
	var seen []string
	n, ok, err := objstore.AbortIncompleteUploads(ctx, b, -time.Minute, func(k string) bool {
		seen = append(seen, k)
		return k == "live.log"
	})
	if err != nil || !ok || n != 1 {
		t.Fatalf("aborted %d, supported %v, err %v; want 1 through the wrappers", n, ok, err)
	}
	out, err := raw.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucketName)})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, u := range out.Uploads {
		left = append(left, aws.ToString(u.Key))
	}
	if len(left) != 2 || left[0] != "other/x.log" || left[1] != "shale/live.log" {
		t.Fatalf("uploads left %q, want other/x.log and shale/live.log", left)
	}
	for _, k := range seen {
		if k != "live.log" && k != "cut.log" {
			t.Fatalf("keep saw %q: a key outside the prefix or with it", k)
		}
	}

	fb, err := fsbucket.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if n, ok, err := objstore.AbortIncompleteUploads(ctx, objstore.WithRetries(fb, objstore.RetryConfig{}), 0, nil); ok || n != 0 || err != nil {
		t.Fatalf("filesystem bucket: %d, %v, %v", n, ok, err)
	}
}
