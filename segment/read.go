package segment

import (
	"fmt"
	"io"

	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/segment/vfs"
)

// File is an open segment file; on the operating system's FS (Config.FS)
// it is an *os.File.
type File = vfs.File

// ReadResult is a byte range of one segment file holding whole batches, for
// the fetch path to send without copying (sendfile, when File is an
// *os.File) or to read with File.ReadAt. File stays open until the segment is deleted (plus
// FileDeleteDelay), truncated away, or the Log is closed; the caller must not
// close it. Size 0 means no data (File is then nil).
type ReadResult struct {
	File        File
	Position    int64 // byte position of the first batch in File
	Size        int   // bytes of whole batches from Position
	FirstOffset int64 // base offset of the first batch (may be below the requested offset)
	NextOffset  int64 // offset after the last batch; the requested offset when Size is 0
}

// Read returns the batches from the one holding offset onward, within one
// segment (a read never spans two; the caller loops from NextOffset), whole
// batches only, all of them ending below maxOffset (the high watermark,
// exclusive; pass math.MaxInt64 for none), and at most maxBytes in total,
// except that with minOneBatch the first batch is returned even when larger
// (KIP-74). Reading at the log end offset, or at or past maxOffset, returns no
// data. An offset below the log start offset or above the log end offset is
// ErrOffsetOutOfRange. Safe to call concurrently with everything.
func (l *Log) Read(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) (ReadResult, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.readLocked(offset, maxBytes, maxOffset, minOneBatch)
}

// readLocked is Read.
// REQUIRES: l.mu held (read).
func (l *Log) readLocked(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) (ReadResult, error) {
	if l.mu.closed {
		return ReadResult{}, ErrClosed
	}
	if offset < l.mu.logStart || offset > l.mu.leo {
		return ReadResult{}, fmt.Errorf("%w: offset %d, log has [%d, %d]", ErrOffsetOutOfRange, offset, l.mu.logStart, l.mu.leo)
	}
	empty := ReadResult{FirstOffset: offset, NextOffset: offset}
	if offset == l.mu.leo || offset >= maxOffset {
		return empty, nil
	}
	segs := l.mu.segments
	for i := max(l.segmentFor(offset), 0); i < len(segs); i++ {
		s := segs[i]
		if s.tail != nil {
			if pos, h, ok := s.tail.find(offset); ok {
				return s.readFrom(pos, h, maxBytes, maxOffset, minOneBatch)
			}
		}
		pos, h, found, err := s.findBatch(offset, s.size)
		if err != nil {
			return empty, err
		}
		if !found {
			continue
		}
		return s.readFrom(pos, h, maxBytes, maxOffset, minOneBatch)
	}
	return empty, nil
}

// readFrom gathers whole batches starting with h at pos.
// REQUIRES: l.mu held (read).
func (s *segment) readFrom(pos int64, h batch.Header, maxBytes int, maxOffset int64, minOneBatch bool) (ReadResult, error) {
	res := ReadResult{Position: pos, FirstOffset: h.BaseOffset, NextOffset: h.BaseOffset}
	var buf [batchHeaderSize]byte
	end := pos
	// Jump over whole batches with the index: its entries sit at batch
	// starts, so the last entry within maxBytes whose batch ends below
	// maxOffset bounds a run of whole, wanted batches; scan headers only
	// from there.
	if j := min(s.idx.floorPosition(pos+int64(maxBytes)), s.idx.floor(maxOffset-1)); j >= 0 {
		if _, p := s.idx.at(j); p > pos && p < s.size {
			jh, err := s.header(p, s.size, &buf)
			if err == nil {
				end, h, res.NextOffset = p, jh, jh.BaseOffset
			}
		}
	}
	for {
		if h.LastOffset() >= maxOffset {
			break
		}
		size := int64(h.Size())
		if end-pos+size > int64(maxBytes) && !(end == pos && minOneBatch) {
			break
		}
		end += size
		res.NextOffset = h.NextOffset()
		if end >= s.size {
			break
		}
		var err error
		if h, err = s.header(end, s.size, &buf); err != nil {
			if end > pos {
				break // serve what is good; the next read reports the error
			}
			return res, err
		}
	}
	res.Size = int(end - pos)
	if res.Size > 0 {
		res.File = s.log
	} else {
		res.FirstOffset = res.NextOffset
	}
	return res, nil
}

// ReadBytes is Read copied into a new slice the caller owns (for tests and
// tools; the fetch path uses Read's file range).
func (l *Log) ReadBytes(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) ([]byte, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	res, err := l.readLocked(offset, maxBytes, maxOffset, minOneBatch)
	if err != nil || res.Size == 0 {
		return nil, err
	}
	b := make([]byte, res.Size)
	if _, err := res.File.ReadAt(b, res.Position); err != nil && err != io.EOF {
		return nil, err
	}
	return b, nil
}
