package s3bucket_test

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/infra/objstore/s3bucket"
)

func minioClient(t *testing.T, srv *objstoretest.S3Server) *minio.Client {
	t.Helper()
	mc, err := minio.New(strings.TrimPrefix(srv.Endpoint, "http://"), &minio.Options{
		Creds:        miniocreds.NewStaticV4(objstoretest.AccessKey, objstoretest.SecretKey, ""),
		Region:       objstoretest.Region,
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	return mc
}

// An independent client (minio-go) reads what the provider wrote: keys
// under the configured prefix, sizes, bytes, and a multipart object.
func TestIndependentClientSeesObjects(t *testing.T) {
	srv := objstoretest.StartS3Server(t)
	var bucketName string
	b := newBucket(t, srv, func(c *s3bucket.Config) { c.Prefix = "cluster-a"; bucketName = c.Bucket })
	defer b.Close()
	ctx := objstoretest.Ctx(t)
	small := objstoretest.Body("small", 777)
	big := objstoretest.Body("big", 12<<20) // three 5 MiB parts
	if err := b.Put(ctx, "t/0/small.index", bytes.NewReader(small), int64(len(small))); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "t/0/big.log", bytes.NewReader(big), int64(len(big))); err != nil {
		t.Fatal(err)
	}

	mc := minioClient(t, srv)
	var keys []string
	for o := range mc.ListObjects(ctx, bucketName, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		keys = append(keys, o.Key)
	}
	if want := []string{"cluster-a/t/0/big.log", "cluster-a/t/0/small.index"}; !slices.Equal(keys, want) {
		t.Fatalf("minio lists %q, want %q", keys, want)
	}
	info, err := mc.StatObject(ctx, bucketName, "cluster-a/t/0/big.log", minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != int64(len(big)) || !strings.HasSuffix(info.ETag, "-3") {
		t.Errorf("big object: size %d, ETag %q; want %d bytes in a 3-part multipart upload", info.Size, info.ETag, len(big))
	}
	for key, want := range map[string][]byte{"cluster-a/t/0/small.index": small, "cluster-a/t/0/big.log": big} {
		obj, err := mc.GetObject(ctx, bucketName, key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(obj)
		obj.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("minio reads %s: %d bytes, %v; want %d equal bytes", key, len(got), err, len(want))
		}
	}
}

// AbortIncompleteMultipartUploads aborts abandoned uploads under the
// prefix that are old enough, and leaves young ones and other prefixes.
func TestAbortIncompleteMultipartUploads(t *testing.T) {
	srv := objstoretest.StartS3Server(t)
	var bucketName string
	b := newBucket(t, srv, func(c *s3bucket.Config) { c.Prefix = "mine"; bucketName = c.Bucket })
	defer b.Close()
	ctx := objstoretest.Ctx(t)
	for _, key := range []string{"mine/a.log", "mine/b.log", "theirs/c.log"} {
		if _, err := b.Client().CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucketName), Key: aws.String(key)}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := b.AbortIncompleteMultipartUploads(ctx, time.Hour, nil)
	if err != nil || n != 0 {
		t.Fatalf("olderThan 1h: aborted %d, %v; want 0", n, err)
	}
	// keep claims one of them: a live upload.
	n, err = b.AbortIncompleteMultipartUploads(ctx, -time.Minute, func(key string) bool { return key == "mine/b.log" })
	if err != nil || n != 1 {
		t.Fatalf("with keep: aborted %d, %v; want 1", n, err)
	}
	n, err = b.AbortIncompleteMultipartUploads(ctx, -time.Minute, nil)
	if err != nil || n != 1 {
		t.Fatalf("aborted %d, %v; want 1", n, err)
	}
	out, err := b.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucketName)})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, u := range out.Uploads {
		left = append(left, aws.ToString(u.Key))
	}
	if !slices.Equal(left, []string{"theirs/c.log"}) {
		t.Errorf("uploads left: %q, want only theirs/c.log", left)
	}
}
