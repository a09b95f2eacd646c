package segment

// Writeback: the writer asks the kernel to start writing the active
// segment's pages out every Config.WritebackBytes of appends, the way
// RocksDB's bytes_per_sync does, instead of leaving them dirty until the
// kernel's own thresholds (by default 10% of memory) are crossed. Left
// dirty, a broker taking a few hundred MB/s builds up gigabytes of dirty
// pages and the kernel then writes them back in bursts; on ext4, appends
// that meet such a burst wait for it (block allocation for delayed
// allocation, journal commits), which showed as tens of milliseconds of
// pwrite in the acks=all latency benchmark, with io pressure in
// /proc/pressure/io and the machine's dirty pages pinned at the background
// threshold. Started early, writeback runs steadily at the append rate and
// the dirty memory a log holds stays near WritebackBytes.
//
// It is only a hint to start writing, not a sync: durability still comes
// from the flusher's fsyncs and flush.messages/flush.ms, and the recovery
// point does not move for it. The writer only queues the range; the
// background flusher calls sync_file_range(SYNC_FILE_RANGE_WRITE), which
// can wait for the device's queue, off the append path.

// pageSize is the unit writeback ranges are aligned to: the page being
// appended to is left alone, so a write to it never waits for its
// writeback.
const pageSize = 4096

// writebackHook, when set (tests only), sees each range the flusher
// starts writing back, before it does.
var writebackHook func(base, from, to int64)

// writebackJob is a range of a segment's .log whose writeback the writer
// asked for.
type writebackJob struct {
	seg      *segment
	from, to int64
}

// maybeWriteback queues writeback of the active segment's whole pages
// appended since the last request, once there are at least
// Config.WritebackBytes of them.
// REQUIRES: writer lock held.
func (l *Log) maybeWriteback() {
	n := l.cfg.WritebackBytes
	if n <= 0 {
		return
	}
	s := l.active()
	if s != l.w.wbSeg || l.w.wbFrom > s.size {
		// A roll or a truncation: start over in this segment (pages
		// already written out are clean, so re-asking costs little).
		l.w.wbSeg, l.w.wbFrom = s, 0
	}
	to := s.size &^ (pageSize - 1)
	if to-l.w.wbFrom < n {
		return
	}
	l.bg.mu.Lock()
	if l.bg.wb.seg == s && l.bg.wb.to >= l.w.wbFrom {
		l.bg.wb.to = to // the flusher has not taken the last request yet: extend it
	} else {
		l.bg.wb = writebackJob{seg: s, from: l.w.wbFrom, to: to}
	}
	l.kickFlusherLocked()
	l.bg.mu.Unlock()
	l.w.wbFrom = to
	l.w.writebacks++
}

// writebackNext starts the writeback the writer asked for, if any. Like
// flushNextRolled it holds bg.syncing, so dropFlushes (before a segment is
// closed or truncated) waits for it and clears the request.
func (l *Log) writebackNext() {
	l.bg.syncing.Lock()
	defer l.bg.syncing.Unlock()
	l.bg.mu.Lock()
	job := l.bg.wb
	l.bg.wb = writebackJob{}
	l.bg.mu.Unlock()
	if job.seg == nil || job.to <= job.from {
		return
	}
	if writebackHook != nil {
		writebackHook(job.seg.base, job.from, job.to)
	}
	if err := startWriteback(job.seg.log, job.from, job.to-job.from); err != nil {
		// Only a hint failed: the kernel writes the pages back anyway and
		// the fsyncs still decide durability.
		l.logger.Warn("segment writeback hint failed", "file", fileName(job.seg.base, logSuffix), "err", err)
	}
}
