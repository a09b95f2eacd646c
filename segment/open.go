package segment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/shale-io/shale/segment/batch"
)

// Open opens the partition log in dir, creating dir and an empty first
// segment when needed, and recovers it.
//
// After a clean Close (the .clean-shutdown marker exists) the files are
// trusted: only the index sizes and entries and the last few batch headers of
// each segment are checked. Otherwise every segment from the one holding the
// recovery point to the end is re-read batch by batch (header, CRC, offsets
// contiguous with the previous batch); the first torn or corrupt batch and
// everything after it is truncated and logged, and the indexes of the
// re-read segments are rebuilt from the log (the entries found in them are
// neither read nor cleared: a killed process leaves the active segment's
// indexes preallocated to segment.index.bytes). Missing or inconsistent
// indexes of any segment are rebuilt; a .log.swap (a committed ReplaceSegment) is put in
// place with its .txnindex.swap; stray .deleted, .cleaned, .swap and temp
// files are removed.
func Open(dir string, cfg Config) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.FS.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	l := &Log{dir: dir, fs: cfg.FS, cfg: cfg, logger: cfg.Logger.With("dir", dir)}
	l.writer.Lock()
	defer l.writer.Unlock()
	l.lockState()
	defer l.mu.Unlock()
	marker := filepath.Join(dir, cleanShutdownFile)
	_, err := l.fs.Stat(marker)
	clean := err == nil
	if err := l.load(clean); err != nil {
		for _, s := range l.mu.segments {
			s.close(false)
		}
		return nil, err
	}
	if clean {
		// From here on a crash must lead to a full recovery.
		if err := l.fs.Remove(marker); err != nil {
			l.closeAllLocked()
			return nil, err
		}
		if err := syncDir(l.fs, dir); err != nil {
			l.closeAllLocked()
			return nil, err
		}
	}
	l.startFlusher()
	l.flushCounted = true // busy until its first MaybeFlush
	busyLogs.Add(1)
	return l, nil
}

// closeAllLocked closes every segment after a failed Open.
// REQUIRES: writer lock and l.mu held.
func (l *Log) closeAllLocked() {
	for _, s := range l.mu.segments {
		s.close(false)
	}
	l.mu.segments = nil
}

// listDir removes stray files and returns the base offsets of the .log files
// and the set of index files present.
func (l *Log) listDir() (bases []int64, present map[string]bool, err error) {
	ents, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, nil, err
	}
	present = make(map[string]bool)
	// A cleaned segment that reached .log.swap is committed (ReplaceSegment
	// fsyncs it before the rename): finish the swap, its .txnindex.swap
	// first when there is one, dropping that segment's offset and time
	// indexes so they are rebuilt from the new bytes. A .txnindex.swap
	// without a .log.swap is a stray: the old log keeps its old index.
	swapped := false
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, logSuffix+swapSuffix) {
			continue
		}
		swapped = true
		final := strings.TrimSuffix(name, swapSuffix)
		l.logger.Info("completing an interrupted segment swap", "file", final)
		stem := strings.TrimSuffix(final, logSuffix)
		// The .txnindex.swap (committed before the .log.swap) and the
		// indexes go first and durably: once the .log.swap is renamed, a
		// crash leaves no sign of the swap, and a later Open would drop the
		// .txnindex.swap as a stray, keeping entries of markers gone.
		if err := completeTxnSwap(l.fs, l.dir, filepath.Join(l.dir, stem+txnIndexSuffix)); err != nil {
			return nil, nil, err
		}
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if err := l.fs.Remove(filepath.Join(l.dir, stem+suf)); err != nil && !os.IsNotExist(err) {
				return nil, nil, err
			}
		}
		if err := syncDir(l.fs, l.dir); err != nil {
			return nil, nil, err
		}
		if err := l.fs.Rename(filepath.Join(l.dir, name), filepath.Join(l.dir, final)); err != nil {
			return nil, nil, err
		}
	}
	if swapped {
		if ents, err = l.fs.ReadDir(l.dir); err != nil {
			return nil, nil, err
		}
	}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		if strings.HasSuffix(name, deletedSuffix) || strings.HasSuffix(name, cleanedSuffix) ||
			strings.HasSuffix(name, swapSuffix) || strings.HasSuffix(name, tmpSuffix) {
			l.logger.Info("removing stray file", "file", name)
			if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil {
				return nil, nil, err
			}
			continue
		}
		if b, ok := parseSegmentName(name, logSuffix); ok {
			bases = append(bases, b)
			continue
		}
		present[name] = true
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	have := make(map[int64]bool, len(bases))
	for _, b := range bases {
		have[b] = true
	}
	for name := range present {
		for _, suf := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			if b, ok := parseSegmentName(name, suf); ok && !have[b] {
				l.logger.Info("removing index without a log", "file", name)
				if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	return bases, present, nil
}

// load opens every segment, checks or recovers it, and sets the log's
// offsets and epoch cache.
// REQUIRES: writer lock and l.mu held.
func (l *Log) load(clean bool) error {
	bases, present, err := l.listDir()
	if err != nil {
		return err
	}
	if len(bases) == 0 {
		bases = []int64{0}
	}
	epochs, err := readEpochCheckpoint(l.fs, l.dir)
	epochsOK := err == nil
	if err != nil {
		l.logger.Warn("leader epoch checkpoint unreadable; rebuilding it from the batches", "err", err)
		epochs = nil
	}
	l.mu.epochs = epochs
	fromFile := slices.Clone(epochs)
	recoverFrom := len(bases)
	if !clean {
		rp, _ := readOffsetFile(l.fs, l.dir, recoveryPointFile)
		recoverFrom = max(sort.Search(len(bases), func(i int) bool { return bases[i] > rp })-1, 0)
	}
	next := bases[0]
	for i, base := range bases {
		if base != next {
			l.logger.Warn("segment does not follow the previous one; dropping it and every later segment",
				"file", fileName(base, logSuffix), "base", base, "expected", next)
			l.removeSegmentFiles(bases[i:])
			break
		}
		prealloc := 0
		if i == len(bases)-1 {
			prealloc = l.cfg.SegmentIndexBytes
		}
		s, err := openSegment(l.fs, l.dir, base, prealloc)
		if err != nil {
			return err
		}
		if s.txnErr != nil {
			l.logger.Warn("transaction index unreadable; dropped", "file", fileName(base, txnIndexSuffix), "err", s.txnErr)
		}
		l.mu.segments = append(l.mu.segments, s)
		trusted := i < recoverFrom && present[fileName(base, indexSuffix)] && present[fileName(base, timeIndexSuffix)]
		if trusted {
			if err := l.checkTrusted(s); err != nil {
				l.logger.Warn("segment failed its sanity check; re-reading it", "file", fileName(base, logSuffix), "err", err)
				trusted = false
			}
		}
		// A segment below the recovery point that passed its check was
		// fsynced, .log and indexes, before the point passed it: an
		// unclean open need not fsync it again.
		s.synced.Store(trusted)
		if !trusted {
			truncated, err := l.recoverSegment(s, i == len(bases)-1)
			if err != nil {
				return err
			}
			if truncated && i+1 < len(bases) {
				l.logger.Warn("dropping segments after a truncated one", "from", fileName(bases[i+1], logSuffix), "count", len(bases)-i-1)
				l.removeSegmentFiles(bases[i+1:])
				if err := s.dropStrayTxns(); err != nil {
					return err
				}
				break
			}
		}
		if err := s.dropStrayTxns(); err != nil {
			return err
		}
		next = s.next
	}
	return l.finishLoad(clean, epochsOK, fromFile)
}

// finishLoad sets offsets, fixes the epoch cache and readies the active segment.
// REQUIRES: writer lock and l.mu held.
func (l *Log) finishLoad(clean, epochsOK bool, fromFile epochCache) error {
	segs := l.mu.segments
	for _, s := range segs[:len(segs)-1] {
		s.sealTimeIndex()
		if err := s.idx.resize(0); err != nil {
			return err
		}
		if err := s.tidx.resize(0); err != nil {
			return err
		}
		s.synced.Store(clean || s.synced.Load())
	}
	act := l.active()
	// The active segment's indexes regain their preallocated size without
	// an fsync, as at a roll: a crash that loses the new size loses
	// nothing, since the active segment is re-read after any unclean
	// stop. (Two fsyncs per partition at every start, before.)
	if err := act.idx.resizeSync(l.cfg.SegmentIndexBytes, false); err != nil {
		return err
	}
	if err := act.tidx.resizeSync(l.cfg.SegmentIndexBytes, false); err != nil {
		return err
	}
	if act.size > 0 && act.firstTs < 0 {
		var buf [batchHeaderSize]byte
		h, err := act.readHeader(0, act.size, &buf)
		if err != nil {
			return err
		}
		act.firstTs = h.MaxTimestamp
	}
	l.mu.leo = act.next
	lso, ok := readOffsetFile(l.fs, l.dir, logStartOffsetFile)
	if !ok {
		lso = segs[0].base
	}
	l.mu.logStart = min(max(lso, segs[0].base), l.mu.leo)

	if !epochsOK {
		if err := l.rebuildEpochs(); err != nil {
			return err
		}
	}
	// Entries from the log end on have no batch left, except the one in
	// force at the log start: cut there, it starts at or below the log
	// start, which an empty log's end equals (a log reset to the remote
	// tail, or deleted up to its end). Dropping it would lose the history
	// of the data below the log start at the second reopen. Entries below
	// the log start stay: DeleteSegmentsBefore cut them before it moved the
	// start, and DeleteLocalSegmentsBefore and ResetToWithHistory keep them
	// on purpose (older offsets in remote storage).
	// Recovery may also have assigned epochs the file lacks (their entries
	// were deferred, installEpochsDeferred): the file gets them before the
	// flush below moves the recovery point past their batches.
	c1 := l.mu.epochs.truncateFromEnd(max(l.mu.leo, l.mu.logStart+1))
	if !epochsOK || c1 || !slices.Equal(l.mu.epochs, fromFile) {
		if err := l.writeEpochs(l.mu.epochs); err != nil {
			return err
		}
	}
	l.w.lastFlush = l.cfg.Now()
	if clean {
		l.rp.point = l.mu.leo
		return nil
	}
	if len(segs) == 1 && act.base == 0 && act.size == 0 && l.mu.leo == 0 {
		// A new (or still empty) log holds nothing to make durable: a
		// crash that loses its empty files reopens an empty log, and the
		// recovery point of an empty log is 0 with or without its file.
		// Its segment is synced by the first flush that has data. (Three
		// fsyncs per partition created, before: a topic of 10,000
		// partitions was 30,000 fsyncs of empty files on each node.)
		return nil
	}
	return l.flushLocked()
}

// rebuildEpochs recomputes the epoch cache from every batch header.
// REQUIRES: writer lock and l.mu held.
func (l *Log) rebuildEpochs() error {
	l.mu.epochs = nil
	var buf [batchHeaderSize]byte
	for _, s := range l.mu.segments {
		for pos := int64(0); pos < s.size; {
			h, err := s.readHeader(pos, s.size, &buf)
			recoveryRead.bytes.Add(batchHeaderSize)
			if err != nil {
				return err
			}
			l.mu.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
			pos += int64(h.Size())
		}
	}
	return nil
}

func (l *Log) removeSegmentFiles(bases []int64) {
	for _, b := range bases {
		for _, suf := range segmentSuffixes {
			if err := l.fs.Remove(filepath.Join(l.dir, fileName(b, suf))); err != nil && !os.IsNotExist(err) {
				l.logger.Warn("removing segment file", "file", fileName(b, suf), "err", err)
			}
		}
	}
}

// checkTrusted loads a segment without reading its data: the indexes must be
// consistent with the .log size, and the batches after the last offset index
// entry (at most index.interval.bytes plus one batch) must parse. It sets
// next, maxTs and the index bookkeeping as if the segment had never been
// closed.
// REQUIRES: writer lock and l.mu held.
func (l *Log) checkTrusted(s *segment) error {
	recoveryRead.bytes.Add(int64(s.idx.n*s.idx.entrySize + s.tidx.n*s.tidx.entrySize))
	if err := s.idx.sanityCheck(s.size); err != nil {
		return err
	}
	pos, lastIdx := int64(0), int64(-1)
	if s.idx.n > 0 {
		lastIdx, pos = s.idx.at(s.idx.n - 1)
	}
	s.next, s.maxTs, s.offMaxTs = s.base, -1, s.base
	var buf [batchHeaderSize]byte
	if s.size > 0 {
		h, err := s.readHeader(0, s.size, &buf)
		recoveryRead.bytes.Add(batchHeaderSize)
		if err != nil {
			return err
		}
		if h.BaseOffset != s.base {
			return fmt.Errorf("%w: first batch has base offset %d, segment base %d", ErrCorruption, h.BaseOffset, s.base)
		}
		s.firstTs = h.MaxTimestamp
	}
	first := true
	for p := pos; p < s.size; {
		h, err := s.readHeader(p, s.size, &buf)
		recoveryRead.bytes.Add(batchHeaderSize)
		if err != nil {
			return err
		}
		if first && lastIdx >= 0 && h.LastOffset() != lastIdx {
			return fmt.Errorf("%w: last index entry says offset %d at %d, batch there ends at %d", ErrCorruption, lastIdx, p, h.LastOffset())
		}
		if !first && h.BaseOffset != s.next || first && pos == 0 && h.BaseOffset != s.base {
			return fmt.Errorf("%w: batch at %d has base offset %d, expected %d", ErrCorruption, p, h.BaseOffset, s.next)
		}
		if h.MaxTimestamp > s.maxTs {
			s.maxTs, s.offMaxTs = h.MaxTimestamp, h.LastOffset()
		}
		first = false
		s.next = h.NextOffset()
		p += int64(h.Size())
	}
	if ts, off := s.tidx.last(); ts > s.maxTs {
		s.maxTs, s.offMaxTs = ts, off
	}
	if err := s.tidx.sanityCheck(s.next); err != nil {
		return err
	}
	s.bytesSinceIndex = s.size - pos
	return nil
}

// recoverSegment re-reads every batch of s (header, CRC, contiguous offsets
// from s.base), rebuilds its indexes and truncates the file at the first bad
// batch. It reports whether it truncated.
// REQUIRES: writer lock and l.mu held.
func (l *Log) recoverSegment(s *segment, last bool) (truncated bool, err error) {
	l.w.scans++
	recoveryRead.segments.Add(1)
	fileSize := s.size
	s.idx.dropEntries()
	s.tidx.dropEntries()
	// Room for the rebuilt entries. The active segment's needs no fsync
	// (it is re-read after any unclean stop). Another segment may lie
	// below the recovery point: its grown size is made durable before any
	// entry is rebuilt, so that a crash before finishLoad trims it leaves a
	// zero tail that fails the check, never old entries past new ones.
	if err := s.idx.resizeSync(l.cfg.SegmentIndexBytes, !last); err != nil {
		return false, err
	}
	if err := s.tidx.resizeSync(l.cfg.SegmentIndexBytes, !last); err != nil {
		return false, err
	}
	s.size, s.next, s.maxTs, s.offMaxTs, s.firstTs, s.bytesSinceIndex = 0, s.base, -1, s.base, -1, 0
	var (
		hbuf   [batchHeaderSize]byte
		data   []byte
		reason error
	)
	for pos := int64(0); pos < fileSize; {
		h, err := s.readHeader(pos, fileSize, &hbuf)
		if err != nil {
			reason = err
			break
		}
		if h.BaseOffset != s.next {
			reason = fmt.Errorf("%w: base offset %d, expected %d", ErrCorruption, h.BaseOffset, s.next)
			break
		}
		if h.LastOffset()-s.base > 1<<31-1 {
			reason = fmt.Errorf("%w: offset %d does not fit the segment's relative offsets", ErrCorruption, h.LastOffset())
			break
		}
		if cap(data) < h.Size() {
			data = make([]byte, h.Size())
		}
		data = data[:h.Size()]
		if _, err := s.log.ReadAt(data, pos); err != nil {
			reason = err
			break
		}
		recoveryRead.bytes.Add(batchHeaderSize + int64(len(data)))
		if err := batch.VerifyCRC(data); err != nil {
			reason = err
			break
		}
		s.applyBatch(&h, pos, int64(l.cfg.IndexIntervalBytes))
		l.mu.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
		pos += int64(h.Size())
	}
	if s.size == fileSize {
		return false, nil
	}
	if reason == nil {
		reason = errors.New("unknown")
	}
	l.logger.Warn("truncating log at a torn or corrupt batch",
		"file", filepath.Base(s.log.Name()), "position", s.size, "bytes", fileSize-s.size, "reason", reason.Error())
	if err := s.log.Truncate(s.size); err != nil {
		return true, err
	}
	return true, nil
}
