package s3bucket_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/infra/objstore/s3bucket"
)

// The provider marks 500 and 503 SlowDown transient, and a 403 and a 404
// not; the caller's own deadline is not transient either.
func TestErrorClassification(t *testing.T) {
	srv := objstoretest.StartS3Server(t)
	proxy := objstoretest.StartFaultProxy(t, srv.Endpoint)
	b := newBucket(t, srv, func(c *s3bucket.Config) { c.Endpoint = proxy.URL })
	ctx := objstoretest.Ctx(t)

	proxy.SetPlan(objstoretest.InternalError, objstoretest.SlowDown)
	for _, want := range []string{"500", "503"} {
		if _, err := b.Stat(ctx, "k"); !objstore.IsRetryable(err) {
			t.Errorf("%s: %v is not retryable", want, err)
		}
	}
	if _, err := b.Stat(ctx, "k"); !errors.Is(err, objstore.ErrNotFound) || objstore.IsRetryable(err) {
		t.Errorf("404: %v, want ErrNotFound, not retryable", err)
	}
	proxy.SetPlan(objstoretest.Stall)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := b.Stat(short, "k"); err == nil || objstore.IsRetryable(err) {
		t.Errorf("caller deadline: %v, want a non-retryable error", err)
	}
	bad := newBucket(t, srv, func(c *s3bucket.Config) {
		c.Credentials = credentials.NewStaticCredentialsProvider(objstoretest.AccessKey, "wrong-secret", "")
	})
	if _, err := bad.Stat(ctx, "k"); err == nil || objstore.IsRetryable(err) || errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("bad secret: %v, want a permanent error", err)
	}
}

// WithRetries rides out 500s, 503 SlowDowns and stalled requests, and
// WithMetrics (inside it) counts every failed attempt.
func TestRetriesThroughFaults(t *testing.T) {
	srv := objstoretest.StartS3Server(t)
	proxy := objstoretest.StartFaultProxy(t, srv.Endpoint)
	counters := &objstore.Counters{}
	b := objstore.WithRetries(
		objstore.WithMetrics(newBucket(t, srv, func(c *s3bucket.Config) { c.Endpoint = proxy.URL }), counters),
		objstore.RetryConfig{MaxAttempts: 5, BaseDelay: 10 * time.Millisecond, MaxDelay: 100 * time.Millisecond, PerAttemptTimeout: 2 * time.Second},
	)
	defer b.Close()
	ctx := objstoretest.Ctx(t)
	body := objstoretest.Body("faults", 100_000)
	plan := []objstoretest.Fault{objstoretest.InternalError, objstoretest.SlowDown, objstoretest.Stall}

	proxy.SetPlan(plan...)
	if err := b.Put(ctx, "f/obj", bytes.NewReader(body), int64(len(body))); err != nil {
		t.Fatalf("Put through faults: %v", err)
	}
	proxy.SetPlan(plan...)
	a, err := b.Stat(ctx, "f/obj")
	if err != nil || a.Size != int64(len(body)) {
		t.Fatalf("Stat through faults: %+v, %v", a, err)
	}
	proxy.SetPlan(plan...)
	rc, err := b.GetRange(ctx, "f/obj", 1000, 5000)
	if err != nil {
		t.Fatalf("GetRange through faults: %v", err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, body[1000:6000]) {
		t.Fatalf("ranged read through faults: %d bytes, %v", len(got), err)
	}
	proxy.SetPlan(objstoretest.SlowDown, objstoretest.InternalError)
	n := 0
	if err := b.List(ctx, "f/", func(objstore.Attrs) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("List through faults: %d keys, %v", n, err)
	}
	proxy.SetPlan(objstoretest.SlowDown)
	if err := b.Delete(ctx, "f/obj"); err != nil {
		t.Fatalf("Delete through faults: %v", err)
	}
	if _, err := b.Stat(ctx, "f/obj"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Stat after Delete: %v", err)
	}

	inj := proxy.Injected()
	injected := inj[objstoretest.InternalError] + inj[objstoretest.SlowDown] + inj[objstoretest.Stall]
	if injected != 12 || inj[objstoretest.Stall] != 3 {
		t.Fatalf("proxy injected %v, want 12 faults with 3 stalls", inj)
	}
	s := counters.Snapshot()
	var errs, reqs int64
	for _, op := range s {
		errs += op.Errors - op.NotFound
		reqs += op.Requests
	}
	// Every injected fault failed exactly one attempt; a slow machine may
	// add timeouts of its own, never fewer failures.
	if errs < int64(injected) {
		t.Errorf("metrics counted %d failed attempts, want >= %d injected faults: %+v", errs, injected, s)
	}
	if s[objstore.OpPut].Errors < 3 || s[objstore.OpStat].Errors < 3+1 || s[objstore.OpGet].Errors < 3 ||
		s[objstore.OpList].Errors < 2 || s[objstore.OpDelete].Errors < 1 {
		t.Errorf("per-operation errors too low: %+v", s)
	}
	if s[objstore.OpStat].NotFound != 1 {
		t.Errorf("stat not-found count %d, want 1", s[objstore.OpStat].NotFound)
	}
	if s[objstore.OpGet].Bytes != 5000 || s[objstore.OpPut].Bytes < int64(len(body)) {
		t.Errorf("bytes: get %d (want 5000), put %d", s[objstore.OpGet].Bytes, s[objstore.OpPut].Bytes)
	}
	if reqs > int64(proxy.Requests()) {
		t.Errorf("metrics saw %d attempts, proxy only %d requests", reqs, proxy.Requests())
	}
}
