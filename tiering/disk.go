package tiering

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/shale-io/shale/partition"
)

// DiskCapacityEnv names a fault-injection hook for process tests: a size
// in bytes. When set, the disk high-water mark check counts the data
// directory as alone on a filesystem of that size (its used fraction is
// the disk space of the files under it over that size), so that a test can
// cross disk_high_watermark without filling a real disk shared with other
// programs. Unset in production.
const DiskCapacityEnv = "SHALE_TEST_DISK_CAPACITY"

// testDiskCapacity is DiskCapacityEnv's value, 0 when unset or invalid.
func testDiskCapacity() int64 {
	n, err := strconv.ParseInt(os.Getenv(DiskCapacityEnv), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// DiskUsage returns the used fraction (0..1) of the filesystem holding dir,
// counting blocks reserved for root as used (what an unprivileged writer can
// still get is what matters).
func DiskUsage(dir string) (float64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	if st.Blocks == 0 {
		return 0, nil
	}
	return 1 - float64(st.Bavail)/float64(st.Blocks), nil
}

// DirDiskBytes returns the disk space the files under dir take (allocated
// blocks, as du counts them: a preallocated sparse index counts what it
// holds). Files that vanish during the walk are skipped.
func DirDiskBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		if st, ok := fi.Sys().(*unix.Stat_t); ok {
			n += st.Blocks * 512
		} else {
			n += fi.Size()
		}
		return nil
	})
	return n, err
}

// diskUsage is the used fraction checkDisk compares with the high-water
// mark: the filesystem's, or under DiskCapacityEnv the data directory's
// share of the simulated capacity.
func (m *Manager) diskUsage() (float64, error) {
	if m.testDiskCapacity > 0 {
		n, err := DirDiskBytes(m.cfg.DataDir)
		return float64(n) / float64(m.testDiskCapacity), err
	}
	return DiskUsage(m.cfg.DataDir)
}

// checkDisk applies the disk high-water mark to every replica (replicas
// lists them). While the disk is full it marks every replica each time,
// the ones opened since included; once below the mark it clears them
// all, and while it stays below there is nothing to clear (a replica
// opens unmarked), so it does not list them (at 10,000 partitions a
// listing every TieringInterval was a node's largest idle allocation).
func (m *Manager) checkDisk(replicas func() []*partition.Replica) {
	if m.cfg.DiskHighWatermark <= 0 || m.cfg.DataDir == "" {
		return
	}
	used, err := m.diskUsage()
	if err != nil {
		m.log.Warn("disk usage check failed", "dir", m.cfg.DataDir, "err", err)
		return
	}
	full := used > m.cfg.DiskHighWatermark
	was := m.stats.diskFull.Swap(full)
	if full != was {
		m.log.Warn("disk high-water mark", "used", used, "high_watermark", m.cfg.DiskHighWatermark, "refusing_produce", full)
	}
	if !full && !was {
		return
	}
	for _, rep := range replicas() {
		rep.SetDiskFull(full)
	}
}
