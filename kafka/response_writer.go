package kafka

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// ResponseWriter is what a BodyWriter writes a response body to. It is valid
// only during BodyWriter.WriteTo and is not safe for concurrent use.
type ResponseWriter struct {
	bw  *bufio.Writer   // buffered writes to the connection
	raw syscall.RawConn // the connection's socket, nil unless a *net.TCPConn
	n   int             // body bytes written so far
}

func newResponseWriter(conn net.Conn, bw *bufio.Writer) *ResponseWriter {
	w := &ResponseWriter{bw: bw}
	if tc, ok := conn.(*net.TCPConn); ok {
		if raw, err := tc.SyscallConn(); err == nil {
			w.raw = raw
		}
	}
	return w
}

// Write writes p to the response body. It never returns a short write
// without an error.
func (w *ResponseWriter) Write(p []byte) (int, error) {
	n, err := w.bw.Write(p)
	w.n += n
	return n, err
}

// SendFile writes n bytes of f, starting at offset, to the response body.
//
// A range that fits in the connection's write buffer is read into it with
// pread. A larger one, on a TCP connection, goes with sendfile(2) with an
// explicit offset, so the bytes go from the page cache to the socket
// without a copy. Either way f's file position is neither used nor moved:
// f may be shared with concurrent readers. On other connections (net.Pipe,
// TLS) or when the file system refuses sendfile, a large range falls back
// to pread into a pooled buffer and write.
//
// A file shorter than offset+n yields io.ErrUnexpectedEOF; the connection is
// then unusable and the server closes it.
func (w *ResponseWriter) SendFile(f *os.File, offset int64, n int) error {
	if n < 0 || offset < 0 {
		return fmt.Errorf("kafka: SendFile: invalid range offset %d length %d", offset, n)
	}
	if n == 0 {
		return nil
	}
	if n <= w.bw.Available() {
		// A small range (a follower's or a caught-up consumer's fetch of a
		// few batches) is read straight into the write buffer: one pread,
		// and the response still leaves in one write, where sendfile would
		// cost a flush, the sendfile and a write for the rest.
		buf := w.bw.AvailableBuffer()[:n]
		if m, err := f.ReadAt(buf, offset); m < n {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("kafka: SendFile: read %s: %w", f.Name(), err)
		}
		_, err := w.Write(buf)
		return err
	}
	if w.raw != nil {
		if err := w.bw.Flush(); err != nil {
			return err
		}
		sent, err := sendFile(w.raw, f, offset, n)
		w.n += sent
		zeroCopyBytes.Add(int64(sent))
		if err == nil {
			return nil
		}
		if sent > 0 || !errors.Is(err, errSendfileUnsupported) {
			return fmt.Errorf("kafka: sendfile: %w", err)
		}
	}
	return w.copyFile(f, offset, n)
}

// copyFile is SendFile's fallback: pread into a pooled buffer, then write.
func (w *ResponseWriter) copyFile(f *os.File, offset int64, n int) error {
	bp := copyBufPool.Get().(*[]byte)
	defer copyBufPool.Put(bp)
	buf := *bp
	for n > 0 {
		chunk := buf[:min(n, len(buf))]
		m, err := f.ReadAt(chunk, offset)
		if m < len(chunk) {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("kafka: SendFile: read %s: %w", f.Name(), err)
		}
		if _, err := w.Write(chunk); err != nil {
			return err
		}
		offset += int64(m)
		n -= m
	}
	return nil
}

// zeroCopyBytes counts the bytes sent with sendfile(2), process-wide.
var zeroCopyBytes atomic.Int64

const copyBufSize = 64 << 10

var copyBufPool = sync.Pool{New: func() any {
	b := make([]byte, copyBufSize)
	return &b
}}
