package tiering

import (
	"golang.org/x/sys/unix"

	"github.com/shale-io/shale/partition"
)

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

// checkDisk applies the disk high-water mark to every replica.
func (m *Manager) checkDisk(reps []*partition.Replica) {
	if m.cfg.DiskHighWatermark <= 0 || m.cfg.DataDir == "" {
		return
	}
	used, err := DiskUsage(m.cfg.DataDir)
	if err != nil {
		m.log.Warn("disk usage check failed", "dir", m.cfg.DataDir, "err", err)
		return
	}
	full := used > m.cfg.DiskHighWatermark
	if full != m.stats.diskFull.Swap(full) {
		m.log.Warn("disk high-water mark", "used", used, "high_watermark", m.cfg.DiskHighWatermark, "refusing_produce", full)
	}
	for _, rep := range reps {
		rep.SetDiskFull(full)
	}
}
