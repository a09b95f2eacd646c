package dumplog

import (
	"os"

	"github.com/shale-io/shale/segment/batch"
)

// batchCursor walks the batch headers of a .log from the start, keeping the
// running maximum of their max timestamps. Index checks move it forward;
// an index that goes backwards rewinds it (rare, and only in a bad index).
type batchCursor struct {
	r      *segmentReader
	pos    int64
	h      batch.Header
	ok     bool  // h is a whole batch at pos
	maxTS  int64 // max timestamp over the batches up to and including h
	err    error // I/O error, sticky
	reason string
}

func openCursor(path string) (*batchCursor, *os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	c := &batchCursor{r: &segmentReader{f: f, size: st.Size()}}
	c.rewind()
	return c, f, nil
}

// rewind goes back to the first batch.
func (c *batchCursor) rewind() {
	c.pos, c.maxTS = 0, -1<<63
	c.load()
}

func (c *batchCursor) load() {
	c.ok = false
	if c.err != nil || c.pos >= c.r.size {
		return
	}
	h, problem, err := c.r.header(c.pos)
	if err != nil {
		c.err = err
		return
	}
	if problem != "" {
		c.reason = problem
		return
	}
	c.h, c.ok = h, true
	c.maxTS = max(c.maxTS, h.MaxTimestamp)
}

// next moves to the following batch.
func (c *batchCursor) next() {
	if c.ok {
		c.pos += int64(c.h.Size())
		c.load()
	}
}
