package vfs

import (
	"os"
)

// OpKind is a kind of filesystem call, for an Injector to choose from.
type OpKind int

// The calls WithErrors can fail.
const (
	OpOpen  OpKind = iota // OpenFile, OpenDir
	OpRead                // ReadAt, ReadFile
	OpWrite               // Write, WriteAt
	OpSync                // Sync of a file or a directory
	OpTruncate
	OpStat // Stat of a path or a file
	OpReadDir
	OpMkdir
	OpRename // Path is the old path
	OpRemove
	OpMap
)

// Op is one call: its kind and the path it is about.
type Op struct {
	Kind OpKind
	Path string
}

// Injector decides the fate of each call: a non-nil error fails it before
// it reaches the wrapped filesystem. It may be called concurrently.
type Injector func(Op) error

// WithErrors wraps fs so that inject can fail any call (pebble's
// vfs/errorfs). Files it opens are wrapped too, so they are not *os.File
// (the fetch path then copies instead of sendfile).
func WithErrors(fs FS, inject Injector) FS { return &errorFS{fs: fs, inject: inject} }

type errorFS struct {
	fs     FS
	inject Injector
}

type errorFile struct {
	File
	efs *errorFS
}

func (e *errorFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if err := e.inject(Op{OpOpen, name}); err != nil {
		return nil, err
	}
	f, err := e.fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, efs: e}, nil
}

func (e *errorFS) OpenDir(name string) (File, error) {
	if err := e.inject(Op{OpOpen, name}); err != nil {
		return nil, err
	}
	f, err := e.fs.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, efs: e}, nil
}

func (e *errorFS) ReadFile(name string) ([]byte, error) {
	if err := e.inject(Op{OpRead, name}); err != nil {
		return nil, err
	}
	return e.fs.ReadFile(name)
}

func (e *errorFS) Stat(name string) (os.FileInfo, error) {
	if err := e.inject(Op{OpStat, name}); err != nil {
		return nil, err
	}
	return e.fs.Stat(name)
}

func (e *errorFS) ReadDir(name string) ([]os.DirEntry, error) {
	if err := e.inject(Op{OpReadDir, name}); err != nil {
		return nil, err
	}
	return e.fs.ReadDir(name)
}

func (e *errorFS) MkdirAll(name string, perm os.FileMode) error {
	if err := e.inject(Op{OpMkdir, name}); err != nil {
		return err
	}
	return e.fs.MkdirAll(name, perm)
}

func (e *errorFS) Rename(oldpath, newpath string) error {
	if err := e.inject(Op{OpRename, oldpath}); err != nil {
		return err
	}
	return e.fs.Rename(oldpath, newpath)
}

func (e *errorFS) Remove(name string) error {
	if err := e.inject(Op{OpRemove, name}); err != nil {
		return err
	}
	return e.fs.Remove(name)
}

func (e *errorFS) Map(f File, size int) ([]byte, error) {
	if err := e.inject(Op{OpMap, f.Name()}); err != nil {
		return nil, err
	}
	return e.fs.Map(unwrap(f), size)
}

func (e *errorFS) Msync(b []byte) error { return e.fs.Msync(b) }

func (e *errorFS) Unmap(f File, b []byte) error { return e.fs.Unmap(unwrap(f), b) }

func unwrap(f File) File {
	if ef, ok := f.(*errorFile); ok {
		return ef.File
	}
	return f
}

func (f *errorFile) ReadAt(b []byte, off int64) (int, error) {
	if err := f.efs.inject(Op{OpRead, f.Name()}); err != nil {
		return 0, err
	}
	return f.File.ReadAt(b, off)
}

func (f *errorFile) WriteAt(b []byte, off int64) (int, error) {
	if err := f.efs.inject(Op{OpWrite, f.Name()}); err != nil {
		return 0, err
	}
	return f.File.WriteAt(b, off)
}

func (f *errorFile) Write(b []byte) (int, error) {
	if err := f.efs.inject(Op{OpWrite, f.Name()}); err != nil {
		return 0, err
	}
	return f.File.Write(b)
}

func (f *errorFile) Stat() (os.FileInfo, error) {
	if err := f.efs.inject(Op{OpStat, f.Name()}); err != nil {
		return nil, err
	}
	return f.File.Stat()
}

func (f *errorFile) Truncate(size int64) error {
	if err := f.efs.inject(Op{OpTruncate, f.Name()}); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *errorFile) Sync() error {
	if err := f.efs.inject(Op{OpSync, f.Name()}); err != nil {
		return err
	}
	return f.File.Sync()
}
