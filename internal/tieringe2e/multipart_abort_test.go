package tieringe2e

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/tiering"
)

// incompleteUploads lists the keys of bucket's incomplete multipart uploads
// through minio-go, sorted.
func incompleteUploads(t *testing.T, mc *minio.Client, bucket string) []string {
	t.Helper()
	var keys []string
	for u := range mc.ListIncompleteUploads(ctxT(t, 30*time.Second), bucket, "", true) {
		if u.Err != nil {
			t.Fatalf("minio list incomplete uploads: %v", u.Err)
		}
		keys = append(keys, u.Key)
	}
	slices.Sort(keys)
	return keys
}

// A multipart upload cut off by a crash leaves parts that no object listing
// shows. The controller's reconciler aborts those of Shale's segment keys
// once older than the orphan grace, and leaves other applications' uploads
// in the same bucket alone.
func TestReconcilerAbortsCutMultipartUploads(t *testing.T) {
	env := startS3(t)
	mc := minioClient(t, env.srv.Endpoint)
	core := &minio.Core{Client: mc}
	ctx := ctxT(t, 60*time.Second)
	id, err := controlplane.ParseTopicID("0123456789abcdef0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	cut := tiering.SegmentKey(tiering.PartitionPrefix("", "gone", id, 0), 0, 3, "feedface", tiering.KindLog)
	foreign := "backups/2026-11-29.tar"
	for _, key := range []string{cut, foreign} {
		uid, err := core.NewMultipartUpload(ctx, env.bucket, key, minio.PutObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := core.PutObjectPart(ctx, env.bucket, key, uid, 1, bytes.NewReader(make([]byte, 5<<20)), 5<<20, minio.PutObjectPartOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := incompleteUploads(t, mc, env.bucket); !slices.Equal(got, []string{cut, foreign}) {
		t.Fatalf("incomplete uploads before: %q", got)
	}
	startNode(t, t.TempDir(), env.srv.Endpoint, env.bucket, testnode.WithOrphanGrace(time.Second))
	waitFor(t, 30*time.Second, "the cut upload aborted", func() bool {
		return !slices.Contains(incompleteUploads(t, mc, env.bucket), cut)
	})
	if got := incompleteUploads(t, mc, env.bucket); !slices.Equal(got, []string{foreign}) {
		t.Fatalf("incomplete uploads after: %q, want only the foreign one", got)
	}
}
