// Package fsbucket is an objstore.Bucket on a local directory: each object is
// one file under the root, its key the file's slash-separated path. It is
// Shale's default cold tier for a single node and the reference provider
// for the acceptance suite.
//
// Puts are atomic: the body goes to a temporary file beside the target,
// which is fsynced and renamed over it, and the directory is fsynced, so a
// crash leaves the old state or the whole new object. Temporary files carry
// the reserved name prefix TempPrefix; keys with a segment starting with it
// are rejected and List never reports them.
//
// One key cannot be both an object and a "directory" of other objects
// ("a" and "a/b"): a file system cannot hold both, and Put returns an error
// for the second. Shale's key layout never does this.
package fsbucket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/shale-io/shale/infra/objstore"
)

// TempPrefix starts the name of every in-progress Put's temporary file.
const TempPrefix = ".shale-tmp-"

// Bucket stores objects as files under a root directory. It is safe for
// concurrent use; concurrent Puts of one key leave one of the bodies whole.
type Bucket struct {
	root string
}

var _ objstore.Bucket = (*Bucket)(nil)

// New opens (creating if needed) a bucket rooted at dir.
func New(dir string) (*Bucket, error) {
	if dir == "" {
		return nil, errors.New("fsbucket: empty directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("fsbucket: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("fsbucket: %w", err)
	}
	return &Bucket{root: abs}, nil
}

// Dir returns the bucket's root directory.
func (b *Bucket) Dir() string { return b.root }

// path maps a validated key to its file path.
func (b *Bucket) path(key string) (string, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return "", err
	}
	for seg := range strings.SplitSeq(key, "/") {
		if strings.HasPrefix(seg, TempPrefix) {
			return "", fmt.Errorf("%w: %q uses the reserved prefix %q", objstore.ErrInvalidKey, key, TempPrefix)
		}
	}
	return filepath.Join(b.root, filepath.FromSlash(key)), nil
}

// Put writes exactly size bytes from r to key, atomically. A reader that
// ends early fails the Put with io.ErrUnexpectedEOF and leaves no object.
func (b *Bucket) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	p, err := b.path(key)
	if err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("fsbucket: put %q: negative size %d", key, size)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := filepath.Dir(p)
	f, err := b.createTemp(dir)
	if err != nil {
		return fmt.Errorf("fsbucket: put %q: %w", key, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	n, err := io.CopyN(f, ctxReader{ctx, r}, size)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("fsbucket: put %q: wrote %d of %d bytes: %w", key, n, size, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsbucket: put %q: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("fsbucket: put %q: %w", key, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("fsbucket: put %q: %w", key, err)
	}
	ok = true
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("fsbucket: put %q: %w", key, err)
	}
	return nil
}

// createTemp makes the temporary file in dir, creating dir first. A
// concurrent Delete may prune dir between the two steps, so it retries.
func (b *Bucket) createTemp(dir string) (*os.File, error) {
	var err error
	for range 5 {
		if err = os.MkdirAll(dir, 0o755); err != nil {
			if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist) {
				return nil, fmt.Errorf("a parent of the key is an object: %w", err)
			}
			continue
		}
		var f *os.File
		f, err = os.CreateTemp(dir, TempPrefix+"*")
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return nil, err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// GetRange opens key and returns a reader of the requested range (see
// objstore.Bucket). The reader holds an open file until closed.
func (b *Bucket) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	p, err := b.path(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, notFound(key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("fsbucket: get %q: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("fsbucket: get %q: %w", key, objstore.ErrNotFound)
	}
	n, err := objstore.CheckRange(fi.Size(), offset, length)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("fsbucket: get %q: %w", key, err)
	}
	return sectionReadCloser{io.NewSectionReader(f, offset, n), f}, nil
}

type sectionReadCloser struct {
	*io.SectionReader
	f *os.File
}

func (s sectionReadCloser) Close() error { return s.f.Close() }

// Stat returns key's size and modification time.
func (b *Bucket) Stat(ctx context.Context, key string) (objstore.Attrs, error) {
	p, err := b.path(key)
	if err != nil {
		return objstore.Attrs{}, err
	}
	if err := ctx.Err(); err != nil {
		return objstore.Attrs{}, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return objstore.Attrs{}, notFound(key, err)
	}
	if !fi.Mode().IsRegular() {
		return objstore.Attrs{}, fmt.Errorf("fsbucket: stat %q: %w", key, objstore.ErrNotFound)
	}
	return objstore.Attrs{Key: key, Size: fi.Size(), LastModified: fi.ModTime()}, nil
}

// Delete removes key and then every directory it leaves empty, up to the
// root. A missing key is not an error.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	p, err := b.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return nil
	case err != nil:
		return fmt.Errorf("fsbucket: delete %q: %w", key, err)
	case fi.IsDir():
		return nil // not an object
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("fsbucket: delete %q: %w", key, err)
	}
	for dir := filepath.Dir(p); dir != b.root && strings.HasPrefix(dir, b.root); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil { // not empty (or already gone): stop
			break
		}
	}
	return nil
}

// List walks the objects under prefix in lexical key order. Directories are
// visited in the order of their names with a trailing slash, which makes the
// walk order equal to the order of full keys ("a-b" < "a/c").
func (b *Bucket) List(ctx context.Context, prefix string, fn func(objstore.Attrs) error) error {
	base := ""
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		base = prefix[:i+1]
	}
	return b.walk(ctx, base, prefix, fn)
}

// walk lists directory dirKey ("" or ending in "/") recursively.
func (b *Bucket) walk(ctx context.Context, dirKey, prefix string, fn func(objstore.Attrs) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(b.root, filepath.FromSlash(dirKey)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		return fmt.Errorf("fsbucket: list %q: %w", prefix, err)
	}
	sortName := func(e fs.DirEntry) string {
		if e.IsDir() {
			return e.Name() + "/"
		}
		return e.Name()
	}
	slices.SortFunc(entries, func(x, y fs.DirEntry) int { return strings.Compare(sortName(x), sortName(y)) })
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), TempPrefix) {
			continue
		}
		key := dirKey + sortName(e)
		if e.IsDir() {
			if !strings.HasPrefix(key, prefix) && !strings.HasPrefix(prefix, key) {
				continue
			}
			if err := b.walk(ctx, key, prefix, fn); err != nil {
				return err
			}
			continue
		}
		if !e.Type().IsRegular() || !strings.HasPrefix(key, prefix) {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted while listing
		}
		if err != nil {
			return fmt.Errorf("fsbucket: list %q: %w", prefix, err)
		}
		if err := fn(objstore.Attrs{Key: key, Size: fi.Size(), LastModified: fi.ModTime()}); err != nil {
			return err
		}
	}
	return nil
}

// Close does nothing: the bucket holds no resources. It is idempotent.
func (b *Bucket) Close() error { return nil }

func notFound(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("fsbucket: %q: %w", key, objstore.ErrNotFound)
	}
	return fmt.Errorf("fsbucket: %q: %w", key, err)
}

// ctxReader stops a copy once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
