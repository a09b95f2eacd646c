package segment

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/shale-io/shale/segment/vfs"
)

// File names in a partition directory.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	deletedSuffix   = ".deleted"
	cleanedSuffix   = ".cleaned"
	swapSuffix      = ".swap"
	tmpSuffix       = ".tmp"

	// txnIndexSuffix (txn_index.go) is the fourth file of a segment.

	epochCheckpointFile = "leader-epoch-checkpoint"
	logStartOffsetFile  = "log-start-offset"
	recoveryPointFile   = "recovery-point"
	cleanShutdownFile   = ".clean-shutdown"
)

// segmentSuffixes are the files of one segment.
var segmentSuffixes = []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix}

// fileName is Kafka's segment file name: the base offset, 20 digits, zero padded.
func fileName(base int64, suffix string) string {
	return fmt.Sprintf("%020d%s", base, suffix)
}

// parseSegmentName returns the base offset of a "<20 digits><suffix>" name.
func parseSegmentName(name, suffix string) (int64, bool) {
	stem, ok := strings.CutSuffix(name, suffix)
	if !ok || len(stem) != 20 {
		return 0, false
	}
	v, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// WriteFileAtomic writes data to dir/name on fs whole or not at all: a
// temporary file, fsynced, renamed over name, and the directory fsynced. A
// crash leaves the old or the new contents. A leftover temporary file is
// removed when the log opens. Layers above (the high watermark checkpoint,
// producer-state snapshots) use it for their own files in a log dir or a
// partition directory, on the FS their log uses.
func WriteFileAtomic(fs vfs.FS, dir, name string, data []byte) error {
	return writeFileAtomic(fs, dir, name, data)
}

// WriteFileNoSync writes data to dir/name on fs through a temporary file
// and a rename, without any fsync: name never holds a partial write while
// the system runs, but after a crash it may be missing, empty or torn (or
// hold the old contents), so the caller must be able to tell (a checksum)
// and do without it. Producer-state snapshots taken at a roll use it: an
// fsync on the append path waits for the journal commit of the background
// flush of the rolled segment.
func WriteFileNoSync(fs vfs.FS, dir, name string, data []byte) error {
	return replaceFileNoSync(fs, dir, name, data)
}

func writeFileAtomic(fs vfs.FS, dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+tmpSuffix)
	f, err := fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := fsync(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fs.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return syncDir(fs, dir)
}

// replaceFileNoSync replaces dir/name with data through a temporary file and
// a rename, without an fsync: the running system never sees a partial
// write; after a crash name may hold the old contents, the new, or (on some
// filesystems) nothing readable.
func replaceFileNoSync(fs vfs.FS, dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+tmpSuffix)
	if err := vfs.WriteFile(fs, tmp, data, 0o644); err != nil {
		return err
	}
	return fs.Rename(tmp, filepath.Join(dir, name))
}

// syncDir makes renames, creations and removals in dir durable.
func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = fsync(d)
	if e := d.Close(); err == nil {
		err = e
	}
	return err
}

// writeOffsetFile stores one decimal offset (log-start-offset, recovery-point).
func writeOffsetFile(fs vfs.FS, dir, name string, v int64) error {
	return writeFileAtomic(fs, dir, name, []byte(strconv.FormatInt(v, 10)+"\n"))
}

// readOffsetFile reads a file written by writeOffsetFile. ok is false when
// the file is missing or does not hold one non-negative number.
func readOffsetFile(fs vfs.FS, dir, name string) (v int64, ok bool) {
	b, err := fs.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return 0, false
	}
	v, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// fsync is f.Sync: the one place this package fsyncs a file or a
// directory. The crash tests hook it to crash the filesystem before each
// fsync; the fuzz target swaps it for a no-op, since it tests parsing, not
// durability, and fsync on a shared disk dominates its time. A test of a
// failing disk gives the Log a filesystem that fails the calls it chooses
// (Config.FS with vfs.WithErrors), not a process-wide switch.
var fsync = func(f vfs.File) error { return f.Sync() }
