package vfs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Default is the operating system's filesystem. Its files are *os.File.
var Default FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return f, nil
}

func (osFS) OpenDir(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) ReadFile(name string) ([]byte, error)         { return os.ReadFile(name) }
func (osFS) Stat(name string) (os.FileInfo, error)        { return os.Stat(name) }
func (osFS) ReadDir(name string) ([]os.DirEntry, error)   { return os.ReadDir(name) }
func (osFS) MkdirAll(name string, perm os.FileMode) error { return os.MkdirAll(name, perm) }
func (osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) Remove(name string) error                     { return os.Remove(name) }

// Map is mmap(MAP_SHARED) with MADV_RANDOM advice. f must be an *os.File.
func (osFS) Map(f File, size int) ([]byte, error) {
	of, ok := f.(*os.File)
	if !ok {
		return nil, fmt.Errorf("vfs: map %s: not an *os.File", f.Name())
	}
	b, err := unix.Mmap(int(of.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", of.Name(), err)
	}
	// The segment indexes are looked up by binary search and appended at
	// their end: no access is sequential. Without this advice the first
	// fault on an active segment's preallocated index reads around it, and
	// ext4 zeroes megabytes of the hole into the page cache (8 MiB of a
	// 10 MiB index here, for one entry); at 1,000 partitions that was most
	// of a node's CPU and its file-backed memory (issue 23).
	if err := unix.Madvise(b, unix.MADV_RANDOM); err != nil {
		_ = unix.Munmap(b)
		return nil, fmt.Errorf("madvise %s: %w", of.Name(), err)
	}
	return b, nil
}

func (osFS) Msync(b []byte) error         { return unix.Msync(b, unix.MS_SYNC) }
func (osFS) Unmap(_ File, b []byte) error { return unix.Munmap(b) }
