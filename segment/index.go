package segment

import (
	"errors"
	"os"

	"github.com/shale-io/shale/segment/vfs"
)

// mmapIndex is a file of fixed-size entries, memory-mapped read-write. The
// file is preallocated to the configured maximum while its segment is active
// and trimmed to the used entries when the segment is rolled or closed, as
// Kafka does.
//
// An index holds no file descriptor: a mapping stays valid after its file is
// closed, so the file is opened only to truncate and remap it (a roll, a
// trim, a truncation) or to fsync it, and closed again (issue 23: three fds
// per partition, .log and both indexes, held 10,000 partitions under a
// 20,000 fd limit). The one exception is pending, below.
//
// Locking: the owning Log mutates entries and n with its writer lock and
// l.mu both held, and remaps (resize, close) only with both held; readers
// hold l.mu (read) while they look entries up, so a mapping never disappears
// under a reader. path changes only with the writer lock held.
type mmapIndex struct {
	fs   vfs.FS
	path string // where the file is now (renameDeleted moves it)
	// mapped is the file data was mapped from, closed once mapped: an FS
	// unmaps through the file it mapped (vfs.FS.Unmap).
	mapped    vfs.File
	entrySize int
	data      []byte // the mapping; nil when the file is empty
	n         int    // entries in use
	// pending is the file a roll trimmed without syncing (trimNoSync),
	// kept open until the segment's fsync (fsyncFile) or close: the
	// background flusher then syncs the inode that was trimmed even if the
	// file was renamed meanwhile (a cleaned segment's old files are renamed
	// before the writer takes the segment back from the flusher). nil
	// otherwise. The writer sets it (before queueing the segment); the
	// flusher takes it with flusher.syncing held; writers touch it again
	// only after dropFlushes (see flusher.go).
	pending vfs.File
	// absent: the file does not exist yet. An empty active segment found
	// without its index files (a new log, or one restarted before its
	// first batch) makes them at its first batch (materialize), as
	// Kafka's lazy indexes do: an idle partition then costs two inodes and
	// two mappings less (issue 23: creating 10,000 partitions was mostly
	// the kernel's inode allocation). want is the size to make it at, as
	// resizes asked meanwhile. Invariant: absent only while the segment
	// holds no batch (Log.write materializes before writing one), so
	// nothing needs an entry of it, a roll never meets it (an empty
	// segment is not rolled) and neither does an upload.
	absent bool
	want   int
}

// openIndex opens or creates the index at path and maps it; the file is
// closed again once mapped. n is the whole entries the file holds; the
// caller checks them (sanityCheck) before trusting them.
//
// prealloc > 0 (the active segment's segment.index.bytes) maps an empty
// file at that size at once, as resizeSync(prealloc, false) would after it:
// a new partition's indexes are then opened once each, not twice.
//
// lazy leaves a missing file missing (absent): the caller's segment is
// empty.
func openIndex(fs vfs.FS, path string, entrySize, prealloc int, lazy bool) (*mmapIndex, error) {
	flags := os.O_RDWR | os.O_CREATE
	if lazy {
		flags = os.O_RDWR
	}
	f, err := fs.OpenFile(path, flags, 0o644)
	if lazy && errors.Is(err, os.ErrNotExist) {
		return &mmapIndex{fs: fs, path: path, entrySize: entrySize, absent: true, want: prealloc}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	x := &mmapIndex{fs: fs, path: path, entrySize: entrySize}
	size := st.Size() - st.Size()%int64(entrySize)
	n := int(size) / entrySize
	if size == 0 && prealloc > 0 {
		size = int64(prealloc - prealloc%entrySize)
	}
	// Only a cut partial entry needs an fsync: a new (empty) index, made at
	// each roll, must not put one on the append path.
	if err := x.mapSize(f, size, st.Size()%int64(entrySize) != 0); err != nil {
		return nil, err
	}
	x.n = n
	return x, nil
}

// file is the index file, open read-write: pending when a roll left it
// open, else opened now (owned reports whether the caller must close it).
func (x *mmapIndex) file() (f vfs.File, owned bool, err error) {
	if x.pending != nil {
		return x.pending, false, nil
	}
	f, err = x.fs.OpenFile(x.path, os.O_RDWR, 0)
	return f, err == nil, err
}

// mapSize truncates or extends f (the index file) to size, fsyncs it when
// sync is set, and maps it. Any previous mapping must already be gone.
func (x *mmapIndex) mapSize(f vfs.File, size int64, sync bool) error {
	if err := f.Truncate(size); err != nil {
		return err
	}
	if sync {
		if err := fsync(f); err != nil {
			return err
		}
	}
	if size == 0 {
		x.data = nil
		return nil
	}
	// The OS FS advises random access (vfs/os.go: issue 23's page cache).
	b, err := x.fs.Map(f, int(size))
	if err != nil {
		return err
	}
	x.data, x.mapped = b, f
	return nil
}

func (x *mmapIndex) unmap() error {
	if x.data == nil {
		return nil
	}
	err := x.fs.Unmap(x.mapped, x.data)
	x.data, x.mapped = nil, nil
	return err
}

// capacity is how many entries the current mapping holds.
func (x *mmapIndex) capacity() int { return len(x.data) / x.entrySize }

func (x *mmapIndex) full() bool { return x.n >= x.capacity() }

// resize remaps the file to room for maxBytes (rounded down to whole entries,
// and never below the used entries): trim with maxBytes 0, expand for an
// active segment with the configured segment.index.bytes.
func (x *mmapIndex) resize(maxBytes int) error { return x.resizeSync(maxBytes, true) }

// trimNoSync trims like resize(0) without msync or fsync: a roll uses it, and
// the background flusher fsyncs the file afterwards (munmap keeps dirty
// pages in the page cache). Until then the index is not trusted: the
// recovery point is still below its segment. The file stays open (pending)
// for that fsync.
func (x *mmapIndex) trimNoSync() error {
	if x.absent {
		return nil
	}
	if x.pending == nil {
		f, err := x.fs.OpenFile(x.path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		x.pending = f
	}
	return x.resizeSync(0, false)
}

// resizeSync is resize, syncing (msync before the unmap, fsync after the
// truncation) only when sync is set. A synced resize also closes a pending
// file: nothing is left for the flusher to make durable.
func (x *mmapIndex) resizeSync(maxBytes int, sync bool) error {
	if x.absent {
		x.want = maxBytes // made at that size by materialize
		return nil
	}
	size := int64(maxBytes - maxBytes%x.entrySize)
	if used := int64(x.n * x.entrySize); size < used {
		size = used
	}
	if int64(len(x.data)) == size {
		return nil
	}
	if sync {
		if err := x.sync(); err != nil {
			return err
		}
	}
	f, owned, err := x.file()
	if err != nil {
		return err
	}
	if err := x.unmap(); err != nil {
		if owned {
			f.Close()
		}
		return err
	}
	err = x.mapSize(f, size, sync)
	if owned {
		if e := f.Close(); err == nil {
			err = e
		}
	} else if sync && err == nil {
		err = x.closePending()
	}
	return err
}

// closePending closes the file a roll left open, if any.
func (x *mmapIndex) closePending() error {
	if x.pending == nil {
		return nil
	}
	err := x.pending.Close()
	x.pending = nil
	return err
}

// materialize makes an absent index's file at the size asked (want) and
// maps it; an index that exists is left as it is. The caller holds the
// locks a remap needs (see mmapIndex).
func (x *mmapIndex) materialize() error {
	if !x.absent {
		return nil
	}
	f, err := x.fs.OpenFile(x.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := x.mapSize(f, int64(x.want-x.want%x.entrySize), false); err != nil {
		return err
	}
	x.absent = false
	return nil
}

// fsyncFile fsyncs the index file through a descriptor (the pending one,
// else one opened for it) and closes it. An absent index has nothing to
// sync: recovery rebuilds a missing index from its log.
func (x *mmapIndex) fsyncFile() error {
	if x.absent {
		return nil
	}
	f, owned, err := x.file()
	if err != nil {
		return err
	}
	err = fsync(f)
	if owned {
		if e := f.Close(); err == nil {
			err = e
		}
		return err
	}
	if err == nil {
		err = x.closePending()
	}
	return err
}

// truncateTo keeps the first n entries and zeroes the rest of the mapping.
func (x *mmapIndex) truncateTo(n int) {
	if n >= x.n {
		return
	}
	clear(x.data[n*x.entrySize : x.n*x.entrySize])
	x.n = n
}

func (x *mmapIndex) entry(i int) []byte {
	return x.data[i*x.entrySize : (i+1)*x.entrySize]
}

func (x *mmapIndex) sync() error {
	if x.data == nil {
		return nil
	}
	return x.fs.Msync(x.data)
}

// close unmaps the index (and closes a pending file), trimming the file to
// the used entries first when trim is set.
func (x *mmapIndex) close(trim bool) error {
	var err error
	if trim {
		err = x.resize(0)
	}
	if e := x.unmap(); err == nil {
		err = e
	}
	if e := x.closePending(); err == nil {
		err = e
	}
	return err
}

// dropEntries forgets every entry without reading or zeroing the file.
// Recovery uses it before rebuilding an index from the log: after an
// unclean stop an active segment's index is preallocated to
// segment.index.bytes, and clearing it would touch every page (issue 23:
// 20 GB of file pages for 1,000 partitions). The rebuilt entries overwrite
// the head; what lies past n is never read (readers stop at n) and is cut
// when the file is trimmed: at a roll, at Close, or when the loader trims a
// segment that is not active. Until then the segment lies at or above the
// recovery point, so a crash recovers it again rather than trusting the
// file.
func (x *mmapIndex) dropEntries() { x.n = 0 }
