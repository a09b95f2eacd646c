// Package objstoretest holds the acceptance suite every objstore.Bucket
// provider must pass, and helpers that start the real S3-compatible server
// (versitygw) the S3 provider's tests run against.
package objstoretest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/shale-io/shale/infra/objstore"
)

// LargeObjectSize is the size of the suite's large object: big enough to go
// multipart on S3 with a 5 MiB part size.
const LargeObjectSize = 40 << 20

// Run runs the acceptance suite. newBucket must return an empty bucket for
// each call; Run closes it when the subtest ends.
func Run(t *testing.T, newBucket func(t *testing.T) objstore.Bucket) {
	t.Helper()
	open := func(t *testing.T) objstore.Bucket {
		b := newBucket(t)
		t.Cleanup(func() {
			if err := b.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return b
	}
	t.Run("PutGetWhole", func(t *testing.T) { testPutGetWhole(t, open(t)) })
	t.Run("Ranges", func(t *testing.T) { testRanges(t, open(t)) })
	t.Run("ZeroLength", func(t *testing.T) { testZeroLength(t, open(t)) })
	t.Run("Large", func(t *testing.T) { testLarge(t, open(t)) })
	t.Run("List", func(t *testing.T) { testList(t, open(t)) })
	t.Run("ListMany", func(t *testing.T) { testListMany(t, open(t)) })
	t.Run("Stat", func(t *testing.T) { testStat(t, open(t)) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, open(t)) })
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, open(t)) })
	t.Run("InvalidKeys", func(t *testing.T) { testInvalidKeys(t, open(t)) })
	t.Run("ShortBody", func(t *testing.T) { testShortBody(t, open(t)) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, open(t)) })
	t.Run("Probe", func(t *testing.T) { testProbe(t, open(t)) })
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Body returns n deterministic pseudo-random bytes derived from seed.
func Body(seed string, n int) []byte {
	out := make([]byte, n)
	_, _ = rand.NewChaCha8(sha256.Sum256([]byte(seed))).Read(out)
	return out
}

func put(t *testing.T, ctx context.Context, b objstore.Bucket, key string, body []byte) {
	t.Helper()
	if err := b.Put(ctx, key, bytes.NewReader(body), int64(len(body))); err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(body), err)
	}
}

func get(ctx context.Context, b objstore.Bucket, key string, off, n int64) ([]byte, error) {
	rc, err := b.GetRange(ctx, key, off, n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func mustGet(t *testing.T, ctx context.Context, b objstore.Bucket, key string, off, n int64) []byte {
	t.Helper()
	got, err := get(ctx, b, key, off, n)
	if err != nil {
		t.Fatalf("GetRange(%q, %d, %d): %v", key, off, n, err)
	}
	return got
}

func listKeys(t *testing.T, ctx context.Context, b objstore.Bucket, prefix string) []string {
	t.Helper()
	var keys []string
	if err := b.List(ctx, prefix, func(a objstore.Attrs) error {
		keys = append(keys, a.Key)
		return nil
	}); err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return keys
}

func testPutGetWhole(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	body := Body("whole", 100_003)
	put(t, ctx, b, "seg/00000000000000000000-0-1.log", body)
	if got := mustGet(t, ctx, b, "seg/00000000000000000000-0-1.log", 0, -1); !bytes.Equal(got, body) {
		t.Fatalf("whole read: got %d bytes, want %d equal bytes", len(got), len(body))
	}
	if got := mustGet(t, ctx, b, "seg/00000000000000000000-0-1.log", 0, int64(len(body))); !bytes.Equal(got, body) {
		t.Fatalf("explicit whole read: got %d bytes, want %d equal bytes", len(got), len(body))
	}
}

func testRanges(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	body := Body("ranges", 1000)
	put(t, ctx, b, "r/obj", body)
	for _, c := range []struct {
		off, n   int64
		from, to int // expected body[from:to]
	}{
		{0, 10, 0, 10},
		{0, 1, 0, 1},
		{500, 100, 500, 600},
		{990, 10, 990, 1000},
		{990, -1, 990, 1000},
		{995, 100, 995, 1000}, // runs past the end: short read
		{999, 1, 999, 1000},
		{1000, -1, 1000, 1000}, // offset == size: empty
		{1000, 10, 1000, 1000},
		{0, 0, 0, 0},
		{500, 0, 500, 500},
	} {
		got, err := get(ctx, b, "r/obj", c.off, c.n)
		if err != nil {
			t.Errorf("GetRange(%d, %d): %v", c.off, c.n, err)
			continue
		}
		if want := body[c.from:c.to]; !bytes.Equal(got, want) {
			t.Errorf("GetRange(%d, %d): got %d bytes, want %d equal bytes", c.off, c.n, len(got), len(want))
		}
	}
	for _, c := range []struct{ off, n int64 }{{1001, 1}, {1001, -1}, {5000, 10}, {-1, 5}, {0, -2}} {
		if _, err := get(ctx, b, "r/obj", c.off, c.n); !errors.Is(err, objstore.ErrInvalidRange) {
			t.Errorf("GetRange(%d, %d): err %v, want ErrInvalidRange", c.off, c.n, err)
		}
	}
}

func testZeroLength(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	put(t, ctx, b, "z/empty", nil)
	a, err := b.Stat(ctx, "z/empty")
	if err != nil || a.Size != 0 || a.Key != "z/empty" {
		t.Fatalf("Stat: %+v, %v; want size 0", a, err)
	}
	for _, c := range []struct{ off, n int64 }{{0, -1}, {0, 0}, {0, 10}} {
		if got := mustGet(t, ctx, b, "z/empty", c.off, c.n); len(got) != 0 {
			t.Errorf("GetRange(%d, %d): %d bytes, want 0", c.off, c.n, len(got))
		}
	}
	if _, err := get(ctx, b, "z/empty", 1, -1); !errors.Is(err, objstore.ErrInvalidRange) {
		t.Errorf("GetRange(1, -1) of empty object: %v, want ErrInvalidRange", err)
	}
	if keys := listKeys(t, ctx, b, "z/"); !slices.Equal(keys, []string{"z/empty"}) {
		t.Errorf("List: %q", keys)
	}
}

func testLarge(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	body := Body("large", LargeObjectSize)
	// A seekable reader: what Shale's uploads pass (os.File, SectionReader).
	if err := b.Put(ctx, "big/obj", io.NewSectionReader(bytes.NewReader(body), 0, int64(len(body))), int64(len(body))); err != nil {
		t.Fatalf("Put large: %v", err)
	}
	a, err := b.Stat(ctx, "big/obj")
	if err != nil || a.Size != LargeObjectSize {
		t.Fatalf("Stat: %+v, %v", a, err)
	}
	got := mustGet(t, ctx, b, "big/obj", 0, -1)
	if !bytes.Equal(got, body) {
		t.Fatalf("large read: %d bytes, content differs", len(got))
	}
	const part = 5 << 20
	for _, off := range []int64{part - 10, 3*part - 1, LargeObjectSize - 7} {
		want := body[off:min(off+20, LargeObjectSize)]
		if got := mustGet(t, ctx, b, "big/obj", off, 20); !bytes.Equal(got, want) {
			t.Errorf("GetRange(%d, 20) across a part boundary: content differs", off)
		}
	}
}

func testList(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	keys := []string{"a-b", "a/c", "a/b/d", "a/b0", "a/ba", "ab", "b/x/y/z", "a/b/e/f"}
	for _, k := range keys {
		put(t, ctx, b, k, []byte(k))
	}
	sorted := slices.Sorted(slices.Values(keys))
	for prefix, want := range map[string][]string{
		"":       sorted,
		"a":      {"a-b", "a/b/d", "a/b/e/f", "a/b0", "a/ba", "a/c", "ab"},
		"a/":     {"a/b/d", "a/b/e/f", "a/b0", "a/ba", "a/c"},
		"a/b":    {"a/b/d", "a/b/e/f", "a/b0", "a/ba"},
		"a/b/":   {"a/b/d", "a/b/e/f"},
		"a/b/e":  {"a/b/e/f"},
		"b/x/y/": {"b/x/y/z"},
		"ab":     {"ab"},
		"c":      nil,
		"a/b/d/": nil,
		"a/c/":   nil,
	} {
		if got := listKeys(t, ctx, b, prefix); !slices.Equal(got, want) {
			t.Errorf("List(%q) = %q, want %q", prefix, got, want)
		}
	}
	var sizes []int64
	if err := b.List(ctx, "a/b/", func(a objstore.Attrs) error { sizes = append(sizes, a.Size); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sizes, []int64{int64(len("a/b/d")), int64(len("a/b/e/f"))}) {
		t.Errorf("List sizes %v", sizes)
	}
	stop := errors.New("stop")
	n := 0
	err := b.List(ctx, "", func(objstore.Attrs) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("List with fn error: err %v after %d calls, want stop after 1", err, n)
	}
}

func testListMany(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	const n = 1100 // more than one S3 ListObjectsV2 page
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	var want []string
	for i := range n {
		key := fmt.Sprintf("many/k%04d", i)
		want = append(want, key)
		g.Go(func() error { return b.Put(gctx, key, strings.NewReader(key), int64(len(key))) })
	}
	put(t, ctx, b, "many-after", []byte("x"))
	put(t, ctx, b, "man", []byte("x"))
	if err := g.Wait(); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if got := listKeys(t, ctx, b, "many/"); !slices.Equal(got, want) {
		t.Fatalf("List(many/): %d keys (first %q), want %d in order", len(got), got[:min(3, len(got))], len(want))
	}
	if got := listKeys(t, ctx, b, "many/k10"); !slices.Equal(got, want[1000:1100]) {
		t.Errorf("List(many/k10): %d keys, want 100", len(got))
	}
	if got := listKeys(t, ctx, b, "many/k0999"); !slices.Equal(got, []string{"many/k0999"}) {
		t.Errorf("List(many/k0999): %q", got)
	}
}

func testStat(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	body := Body("stat", 4321)
	put(t, ctx, b, "s/obj.index", body)
	a, err := b.Stat(ctx, "s/obj.index")
	if err != nil {
		t.Fatal(err)
	}
	if a.Key != "s/obj.index" || a.Size != 4321 || a.LastModified.IsZero() {
		t.Errorf("Stat = %+v, want key s/obj.index, size 4321, a modification time", a)
	}
	if _, err := b.Stat(ctx, "s/obj"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Stat of a key prefix: %v, want ErrNotFound", err)
	}
	if _, err := b.Stat(ctx, "s"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Stat of a key's directory: %v, want ErrNotFound", err)
	}
}

func testDelete(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	put(t, ctx, b, "d/x/1", []byte("one"))
	put(t, ctx, b, "d/x/2", []byte("two"))
	if err := b.Delete(ctx, "d/x/1"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stat(ctx, "d/x/1"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Stat after Delete: %v", err)
	}
	if _, err := get(ctx, b, "d/x/1", 0, -1); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("GetRange after Delete: %v", err)
	}
	if err := b.Delete(ctx, "d/x/1"); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	if err := b.Delete(ctx, "d/never"); err != nil {
		t.Errorf("Delete of a missing key: %v", err)
	}
	if got := listKeys(t, ctx, b, "d/"); !slices.Equal(got, []string{"d/x/2"}) {
		t.Errorf("List after Delete: %q", got)
	}
	if err := b.Delete(ctx, "d/x/2"); err != nil {
		t.Fatal(err)
	}
	if got := listKeys(t, ctx, b, ""); len(got) != 0 {
		t.Errorf("List after deleting all: %q", got)
	}
	// The key's old "directory" is free for an object now.
	put(t, ctx, b, "d/x", []byte("file"))
	if got := mustGet(t, ctx, b, "d/x", 0, -1); string(got) != "file" {
		t.Errorf("read %q", got)
	}
}

func testNotFound(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	if _, err := b.Stat(ctx, "nope/a"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Stat: %v", err)
	}
	for _, c := range []struct{ off, n int64 }{{0, -1}, {0, 10}, {5, 5}, {0, 0}} {
		if _, err := get(ctx, b, "nope/a", c.off, c.n); !errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("GetRange(%d, %d): %v", c.off, c.n, err)
		}
	}
	if got := listKeys(t, ctx, b, "nope/"); len(got) != 0 {
		t.Errorf("List: %q", got)
	}
}

func testInvalidKeys(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	for _, k := range []string{"", "/abs", "a//b", "a/", "../x", "a/../b", "a/./b", "."} {
		if err := b.Put(ctx, k, strings.NewReader("x"), 1); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Put(%q): %v, want ErrInvalidKey", k, err)
		}
		if _, err := b.Stat(ctx, k); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Stat(%q): %v, want ErrInvalidKey", k, err)
		}
		if _, err := b.GetRange(ctx, k, 0, -1); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("GetRange(%q): %v, want ErrInvalidKey", k, err)
		}
		if err := b.Delete(ctx, k); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Delete(%q): %v, want ErrInvalidKey", k, err)
		}
	}
}

// testShortBody: a reader that ends before size fails the Put and leaves no
// object (whole or nothing).
func testShortBody(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	body := Body("short", 1000)
	if err := b.Put(ctx, "short/obj", onlyReader{bytes.NewReader(body[:600])}, 1000); err == nil {
		t.Fatal("Put with a short body succeeded")
	}
	if _, err := b.Stat(ctx, "short/obj"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Stat after a failed Put: %v, want ErrNotFound", err)
	}
	// A reader that is not seekable, longer than size: exactly size bytes
	// are stored.
	if err := b.Put(ctx, "short/plain", onlyReader{bytes.NewReader(body)}, 900); err != nil {
		t.Fatalf("Put from a plain reader: %v", err)
	}
	if got := mustGet(t, ctx, b, "short/plain", 0, -1); !bytes.Equal(got, body[:900]) {
		t.Errorf("plain reader: stored %d bytes, want the first 900", len(got))
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.Put(canceled, "short/canceled", bytes.NewReader(body), 1000); err == nil {
		t.Error("Put with a canceled context succeeded")
	}
	if _, err := b.Stat(ctx, "short/canceled"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Stat after a canceled Put: %v, want ErrNotFound", err)
	}
}

// onlyReader hides every method but Read.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func testConcurrent(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	shared := Body("shared", 64<<10)
	put(t, ctx, b, "c/shared", shared)
	g, gctx := errgroup.WithContext(ctx)
	for w := range 8 {
		g.Go(func() error {
			for i := range 10 {
				key := fmt.Sprintf("c/w%d/%02d", w, i)
				body := Body(key, 1000+w*100+i)
				if err := b.Put(gctx, key, bytes.NewReader(body), int64(len(body))); err != nil {
					return fmt.Errorf("put %s: %w", key, err)
				}
				got, err := get(gctx, b, key, 0, -1)
				if err != nil {
					return fmt.Errorf("get %s: %w", key, err)
				}
				if !bytes.Equal(got, body) {
					return fmt.Errorf("get %s: content differs", key)
				}
				off := int64((w*7919 + i*104729) % len(shared))
				got, err = get(gctx, b, "c/shared", off, 4096)
				if err != nil {
					return fmt.Errorf("get shared@%d: %w", off, err)
				}
				if !bytes.Equal(got, shared[off:min(off+4096, int64(len(shared)))]) {
					return fmt.Errorf("get shared@%d: content differs", off)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := listKeys(t, ctx, b, "c/w"); len(got) != 80 {
		t.Errorf("List(c/w): %d keys, want 80", len(got))
	}
}

// testProbe: objstore.Probe passes twice on the same key (the second as
// after a crash that left the probe object) and leaves nothing behind.
func testProbe(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	put(t, ctx, b, "probe/node-1", []byte("left by a crash"))
	for range 2 {
		if err := objstore.Probe(ctx, b, "probe/node-1"); err != nil {
			t.Fatal(err)
		}
	}
	if keys := listKeys(t, ctx, b, "probe/"); len(keys) != 0 {
		t.Fatalf("objects left after the probe: %v", keys)
	}
}
