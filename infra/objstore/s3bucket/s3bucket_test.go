package s3bucket_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/infra/objstore/s3bucket"
)

func newBucket(t *testing.T, srv *objstoretest.S3Server, mod func(*s3bucket.Config)) *s3bucket.Bucket {
	t.Helper()
	cfg := s3bucket.Config{
		Endpoint:    srv.Endpoint,
		Bucket:      srv.CreateBucket(t),
		Region:      objstoretest.Region,
		PathStyle:   true,
		PartSize:    s3bucket.MinPartSize,
		Credentials: credentials.NewStaticCredentialsProvider(objstoretest.AccessKey, objstoretest.SecretKey, ""),
	}
	if mod != nil {
		mod(&cfg)
	}
	b, err := s3bucket.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAcceptance(t *testing.T) {
	srv := objstoretest.StartS3Server(t)
	objstoretest.Run(t, func(t *testing.T) objstore.Bucket { return newBucket(t, srv, nil) })
}
