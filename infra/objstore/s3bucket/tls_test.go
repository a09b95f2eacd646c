package s3bucket_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/infra/objstore/s3bucket"
	"github.com/shale-io/shale/internal/testcerts"
)

// TestHTTPSEndpointWithCABundle: an https:// endpoint whose certificate a
// private CA signed works once the standard AWS chain's AWS_CA_BUNDLE names
// that CA, and fails without it (the certificate is verified).
func TestHTTPSEndpointWithCABundle(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "s3-ca")
	cert, key := ca.Server(t, "s3")
	srv := objstoretest.StartS3ServerTLS(t, testcerts.Write(t, dir, "s3.crt", cert), testcerts.Write(t, dir, "s3.key", key))
	if !strings.HasPrefix(srv.Endpoint, "https://") {
		t.Fatalf("endpoint %s", srv.Endpoint)
	}
	ctx := objstoretest.Ctx(t)

	untrusted := newBucket(t, srv, func(c *s3bucket.Config) { c.Bucket = "shale-test-untrusted" })
	err := untrusted.Put(ctx, "k", strings.NewReader("v"), 1)
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Put without the CA: %v, want a certificate error", err)
	}

	t.Setenv("AWS_CA_BUNDLE", testcerts.Write(t, dir, "ca.pem", ca.CertPEM))
	b := newBucket(t, srv, nil)
	data := bytes.Repeat([]byte("tiered"), 1000)
	if err := b.Put(ctx, "seg/00000000000000000000.log", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal("Put over HTTPS: ", err)
	}
	r, err := b.GetRange(ctx, "seg/00000000000000000000.log", 6, 12)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || string(got) != "tieredtiered" {
		t.Fatalf("GetRange over HTTPS: %q %v", got, err)
	}
}
