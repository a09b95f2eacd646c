package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemFS is an in-memory FS that remembers what was synced, so that a test
// can crash it (CrashClone): file data survives a crash only as of the
// file's last Sync, and a directory's entries (creations, renames,
// removals) only as of the directory's last Sync. A file created, synced,
// but whose directory was never synced is gone after a crash, as on a
// real disk (pebble's memfs_crashable: "created file disappears if
// directory is not synced"). The root directory exists from the start and
// is durable. Paths are slash-separated; a relative path is taken from the
// root.
//
// Map returns the file's own bytes: stores to the slice are writes to the
// file, like a shared mapping, and a mapped file's size may not change.
type MemFS struct {
	mu   sync.Mutex
	root *memNode
}

// memNode is a file or a directory. Guarded by MemFS.mu, except the bytes
// of a mapped file, which the mapping's user writes directly.
type memNode struct {
	isDir bool
	// a file: its bytes, and its bytes at its last Sync
	data, synced []byte
	mapped       int
	mod          time.Time
	// a directory: its entries, and its entries at its last Sync
	children, syncedChildren map[string]*memNode
}

func newDirNode() *memNode {
	return &memNode{isDir: true, mod: time.Now(), children: map[string]*memNode{}, syncedChildren: map[string]*memNode{}}
}

// NewMem returns an empty crashable in-memory filesystem.
func NewMem() *MemFS { return &MemFS{root: newDirNode()} }

// CrashClone returns a new MemFS holding what a crash of m would leave:
// each directory with its entries as of its last Sync, each file with its
// bytes as of its last Sync. m itself is unchanged and stays usable (the
// files open on it keep writing to m, not to the clone).
func (m *MemFS) CrashClone() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[*memNode]*memNode{}
	var clone func(n *memNode) *memNode
	clone = func(n *memNode) *memNode {
		if c, ok := seen[n]; ok {
			return c
		}
		c := &memNode{isDir: n.isDir, mod: n.mod}
		seen[n] = c
		if n.isDir {
			c.children = make(map[string]*memNode, len(n.syncedChildren))
			for name, ch := range n.syncedChildren {
				c.children[name] = clone(ch)
			}
			c.syncedChildren = maps.Clone(c.children)
			return c
		}
		c.data = bytes.Clone(n.synced)
		c.synced = bytes.Clone(n.synced)
		return c
	}
	return &MemFS{root: clone(m.root)}
}

func splitPath(name string) []string {
	var parts []string
	for _, p := range strings.Split(path.Clean("/"+name), "/") {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return parts
}

// walk returns the node at parts, or nil. REQUIRES: m.mu held.
func (m *MemFS) walk(parts []string) *memNode {
	n := m.root
	for _, p := range parts {
		if !n.isDir {
			return nil
		}
		if n = n.children[p]; n == nil {
			return nil
		}
	}
	return n
}

// parent returns the directory that holds name and name's last element.
// REQUIRES: m.mu held.
func (m *MemFS) parent(op, name string) (*memNode, string, error) {
	parts := splitPath(name)
	if len(parts) == 0 {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	d := m.walk(parts[:len(parts)-1])
	if d == nil || !d.isDir {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return d, parts[len(parts)-1], nil
}

var (
	errIsDir  = errors.New("is a directory")
	errMapped = errors.New("vfs: size change of a mapped file")
)

// OpenFile implements FS.
func (m *MemFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parent("open", name)
	if err != nil {
		return nil, err
	}
	n := d.children[base]
	if n == nil {
		if flag&os.O_CREATE == 0 {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		n = &memNode{mod: time.Now()}
		d.children[base] = n
	}
	if n.isDir {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errIsDir}
	}
	if flag&os.O_TRUNC != 0 {
		if err := n.truncate(0); err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
	return &memFile{fs: m, n: n, name: name, flag: flag}, nil
}

// OpenDir implements FS.
func (m *MemFS) OpenDir(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.walk(splitPath(name))
	if n == nil || !n.isDir {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memFile{fs: m, n: n, name: name, flag: os.O_RDONLY}, nil
}

// ReadFile implements FS.
func (m *MemFS) ReadFile(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.walk(splitPath(name))
	if n == nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	if n.isDir {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errIsDir}
	}
	return bytes.Clone(n.data), nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.walk(splitPath(name))
	if n == nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return n.info(path.Base(path.Clean("/" + name))), nil
}

// ReadDir implements FS: the entries sorted by name.
func (m *MemFS) ReadDir(name string) ([]os.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.walk(splitPath(name))
	if n == nil || !n.isDir {
		return nil, &fs.PathError{Op: "readdirent", Path: name, Err: fs.ErrNotExist}
	}
	names := slices.Sorted(maps.Keys(n.children))
	out := make([]os.DirEntry, len(names))
	for i, nm := range names {
		out[i] = fs.FileInfoToDirEntry(n.children[nm].info(nm))
	}
	return out, nil
}

// MkdirAll implements FS. A new directory's entry in its parent is
// durable once the parent is synced.
func (m *MemFS) MkdirAll(name string, perm os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.root
	for _, p := range splitPath(name) {
		c := n.children[p]
		if c == nil {
			c = newDirNode()
			n.children[p] = c
		}
		if !c.isDir {
			return &fs.PathError{Op: "mkdir", Path: name, Err: fs.ErrExist}
		}
		n = c
	}
	return nil
}

// Rename implements FS.
func (m *MemFS) Rename(oldpath, newpath string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	od, ob, err := m.parent("rename", oldpath)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrNotExist}
	}
	nd, nb, err := m.parent("rename", newpath)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrNotExist}
	}
	n := od.children[ob]
	if n == nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrNotExist}
	}
	if t := nd.children[nb]; t != nil && t.isDir {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrExist}
	}
	delete(od.children, ob)
	nd.children[nb] = n
	return nil
}

// Remove implements FS. Open files of a removed name keep working.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parent("remove", name)
	if err != nil {
		return err
	}
	n := d.children[base]
	if n == nil {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	if n.isDir && len(n.children) > 0 {
		return &fs.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
	}
	delete(d.children, base)
	return nil
}

// Map implements FS: the slice is the file's bytes.
func (m *MemFS) Map(f File, size int) ([]byte, error) {
	mf, ok := f.(*memFile)
	if !ok || mf.fs != m {
		return nil, fmt.Errorf("vfs: map %s: not a file of this MemFS", f.Name())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if size <= 0 || size > len(mf.n.data) {
		return nil, fmt.Errorf("vfs: map %s: %d bytes of a %d-byte file", mf.name, size, len(mf.n.data))
	}
	mf.n.mapped++
	return mf.n.data[:size:size], nil
}

// Msync implements FS; the slice is the file.
func (m *MemFS) Msync([]byte) error { return nil }

// Unmap implements FS.
func (m *MemFS) Unmap(f File, _ []byte) error {
	mf, ok := f.(*memFile)
	if !ok || mf.fs != m {
		return fmt.Errorf("vfs: unmap %s: not a file of this MemFS", f.Name())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	mf.n.mapped--
	return nil
}

// REQUIRES: MemFS.mu held.
func (n *memNode) info(name string) os.FileInfo {
	fi := memInfo{name: name, size: int64(len(n.data)), mod: n.mod, mode: 0o644}
	if n.isDir {
		fi.mode, fi.size = fs.ModeDir|0o755, 0
	}
	return fi
}

// truncate sets the file's size; bytes past it read as zeros if it grows
// again. REQUIRES: MemFS.mu held.
func (n *memNode) truncate(size int64) error {
	if int64(len(n.data)) == size {
		return nil
	}
	if n.mapped > 0 {
		return errMapped
	}
	if size < int64(len(n.data)) {
		clear(n.data[size:])
		n.data = n.data[:size]
	} else {
		n.grow(size)
	}
	n.mod = time.Now()
	return nil
}

// grow extends the file to size with zeros. REQUIRES: MemFS.mu held and
// the file unmapped, or size within its length.
func (n *memNode) grow(size int64) {
	if size <= int64(len(n.data)) {
		return
	}
	if size <= int64(cap(n.data)) {
		n.data = n.data[:size] // past len is zero (truncate clears)
		return
	}
	d := make([]byte, size, max(size, 2*int64(cap(n.data))))
	copy(d, n.data)
	n.data = d
}

type memInfo struct {
	name string
	size int64
	mode fs.FileMode
	mod  time.Time
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return i.mode }
func (i memInfo) ModTime() time.Time { return i.mod }
func (i memInfo) IsDir() bool        { return i.mode.IsDir() }
func (i memInfo) Sys() any           { return nil }

// memFile is an open file or directory of a MemFS.
type memFile struct {
	fs     *MemFS
	n      *memNode
	name   string
	flag   int
	pos    int64 // Write's position (without O_APPEND)
	closed bool
}

func (f *memFile) Name() string { return f.name }

// check reports why an operation on f is not allowed. REQUIRES: MemFS.mu held.
func (f *memFile) check(op string, write bool) error {
	switch {
	case f.closed:
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	case f.n.isDir && op != "sync" && op != "stat":
		return &fs.PathError{Op: op, Path: f.name, Err: errIsDir}
	case write && f.flag&(os.O_WRONLY|os.O_RDWR) == 0:
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrPermission}
	case !write && f.flag&os.O_WRONLY != 0 && op == "read":
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrPermission}
	}
	return nil
}

func (f *memFile) ReadAt(b []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	k := copy(b, f.n.data[off:])
	if k < len(b) {
		return k, io.EOF
	}
	return k, nil
}

// writeAt REQUIRES: MemFS.mu held.
func (f *memFile) writeAt(b []byte, off int64) (int, error) {
	end := off + int64(len(b))
	if end > int64(len(f.n.data)) {
		if f.n.mapped > 0 {
			return 0, &fs.PathError{Op: "write", Path: f.name, Err: errMapped}
		}
		f.n.grow(end)
	}
	copy(f.n.data[off:], b)
	f.n.mod = time.Now()
	return len(b), nil
}

func (f *memFile) WriteAt(b []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if f.flag&os.O_APPEND != 0 || off < 0 {
		return 0, &fs.PathError{Op: "writeat", Path: f.name, Err: fs.ErrInvalid}
	}
	return f.writeAt(b, off)
}

func (f *memFile) Write(b []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	off := f.pos
	if f.flag&os.O_APPEND != 0 {
		off = int64(len(f.n.data))
	}
	k, err := f.writeAt(b, off)
	f.pos = off + int64(k)
	return k, err
}

func (f *memFile) Stat() (os.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("stat", false); err != nil {
		return nil, err
	}
	return f.n.info(path.Base(path.Clean("/" + f.name))), nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: fs.ErrInvalid}
	}
	if err := f.n.truncate(size); err != nil {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: err}
	}
	return nil
}

// Sync makes the file's bytes, or a directory's entries, survive a crash.
func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("sync", false); err != nil {
		return err
	}
	if f.n.isDir {
		f.n.syncedChildren = maps.Clone(f.n.children)
		return nil
	}
	f.n.synced = bytes.Clone(f.n.data)
	return nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.closed = true
	return nil
}
