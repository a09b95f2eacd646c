// Package vfs is the filesystem under segment: the few calls a partition
// log makes on its directory and files, so that tests can run the log on a
// filesystem that loses what was not synced at a simulated crash (NewMem)
// or fails chosen calls (WithErrors), as pebble's vfs, vfs/errorfs and
// crashable memfs do. Default is the operating system's; it returns
// *os.File, so the fetch path can send its ranges with sendfile.
//
// It sits under segment and imports no Shale package.
package vfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// File is an open file or directory. *os.File is one. A directory is
// opened (OpenDir) only to Sync it: that makes the creations, renames and
// removals of entries in it durable.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Writer
	io.Closer
	Name() string
	Stat() (os.FileInfo, error)
	Truncate(size int64) error
	Sync() error
}

// FS is a filesystem. Paths are as the os package takes them. Errors for a
// missing file satisfy errors.Is(err, os.ErrNotExist) (and os.IsNotExist).
// Safe for concurrent use.
type FS interface {
	// OpenFile is os.OpenFile; flag is a combination of os.O_RDONLY,
	// O_WRONLY, O_RDWR, O_CREATE, O_TRUNC, O_APPEND.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// OpenDir opens the directory name for Sync.
	OpenDir(name string) (File, error)
	ReadFile(name string) ([]byte, error)
	Stat(name string) (os.FileInfo, error)
	ReadDir(name string) ([]os.DirEntry, error)
	MkdirAll(name string, perm os.FileMode) error
	// Rename is os.Rename: it replaces newpath. Durable once the
	// directories of both paths are synced.
	Rename(oldpath, newpath string) error
	Remove(name string) error
	// Map maps the first size bytes of f, an open file of this FS at least
	// size long, read-write and shared: stores to the slice are writes to
	// the file (fsync of f makes them durable), and its length must not
	// change while mapped. Size is positive.
	Map(f File, size int) ([]byte, error)
	// Msync writes the stores to a mapping back to its file (msync
	// MS_SYNC); an fsync of the file follows for them to be durable.
	Msync(b []byte) error
	// Unmap releases a slice Map returned; it must not be used afterwards.
	Unmap(f File, b []byte) error
}

// WriteFile is os.WriteFile on fs: name is created or truncated, then
// written; nothing is synced.
func WriteFile(fs FS, name string, data []byte, perm os.FileMode) error {
	f, err := fs.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if e := f.Close(); err == nil {
		err = e
	}
	return err
}

// SyncDir fsyncs the directory dir of fs.
func SyncDir(fs FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if e := d.Close(); err == nil {
		err = e
	}
	return err
}

// RemoveAll is os.RemoveAll on fs: name and everything below it are
// removed, children first; a missing name is no error. Nothing is synced.
// Symbolic links are followed (FS has no Lstat): it is for directories
// Shale made.
func RemoveAll(fs FS, name string) error {
	fi, err := fs.Stat(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		entries, err := fs.ReadDir(name)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := RemoveAll(fs, filepath.Join(name, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := fs.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
