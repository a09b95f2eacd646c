package kafka

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// write is the writer: it writes the replies in request order, calling
// Reply.Wait and Reply.Body in that order, and flushes whenever no further
// reply is queued, so that pipelined replies share syscalls. On a write or
// Wait failure it closes the connection and drops the rest.
func (c *conn) write(out <-chan *item) {
	bw := bufio.NewWriterSize(c.nc, writeBufferSize)
	rw := newResponseWriter(c.nc, bw)
	failed := false
	timed := c.s.timed
	for it := range out {
		if failed {
			c.drop(it)
			continue
		}
		if !it.holdUntil.IsZero() && !c.hold(bw, it.holdUntil) {
			failed = true
			c.drop(it)
			continue
		}
		if timed {
			it.picked = time.Since(it.read)
		}
		err := c.writeReply(bw, rw, it)
		if err == nil && len(out) == 0 {
			err = bw.Flush()
		}
		if err == nil {
			c.mute(it.req.throttle) // KIP-219: from the reply on
		}
		c.observe(it, err, true)
		c.drop(it) // the reply is written: release the frame
		if err != nil {
			failed = true
			if c.ctx.Err() == nil {
				c.log.Warn("kafka: closing connection after write failure",
					"api", kmsg.NameForKey(it.req.Key), "correlation_id", it.req.CorrelationID, "err", err)
			}
			c.forceClose()
		}
	}
	if !failed {
		if err := bw.Flush(); err != nil {
			c.log.Debug("kafka: final flush failed", "err", err)
		}
	}
}

// hold delays the answer to a failed authentication until until
// (FailedAuthenticationDelay), as Kafka's Selector delays it, after
// flushing the replies before it. The reader has stopped, so the
// connection is muted meanwhile; it costs a timer on the writer, which
// waits for this last reply anyway. It reports false when the connection
// was closed or the server began to shut down first: the reply is then
// dropped (a shutdown does not wait out the delay).
func (c *conn) hold(bw *bufio.Writer, until time.Time) bool {
	if err := bw.Flush(); err != nil {
		return false
	}
	d := time.Until(until)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
	case <-c.s.closing:
	}
	return false
}

// writeReply writes one reply, recovering a panic in Wait or a BodyWriter.
func (c *conn) writeReply(bw *bufio.Writer, rw *ResponseWriter, it *item) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v\n%s", ErrHandlerPanic, v, debug.Stack())
		}
	}()
	r := &it.reply
	switch {
	case r.NoResponse:
		return nil
	case r.Response != nil:
		return writeResponse(bw, it.req.CorrelationID, r.Response)
	case r.Wait != nil:
		// Earlier replies must not sit in the buffer while we wait.
		if err := bw.Flush(); err != nil {
			return err
		}
		if c.s.timed {
			it.waitStart = time.Since(it.read)
		}
		resp, err := r.Wait(c.ctx)
		if c.s.timed {
			it.waitEnd, it.waited = time.Since(it.read), true
		}
		if err != nil {
			return fmt.Errorf("reply wait: %w", err)
		}
		if err := checkResponse(it.req.Key, it.req.Version, resp); err != nil {
			return err
		}
		setThrottle(resp, it.req.throttle)
		return writeResponse(bw, it.req.CorrelationID, resp)
	default:
		return writeBody(bw, rw, it)
	}
}

// writeResponse encodes resp with its response header into a pooled buffer
// and writes it to bw.
func writeResponse(bw *bufio.Writer, corr int32, resp kmsg.Response) error {
	bp := encodeBufPool.Get().(*[]byte)
	buf := append((*bp)[:0], 0, 0, 0, 0, 0, 0, 0, 0) // size, correlation id
	if responseHeaderFlexible(resp.Key(), resp.IsFlexible()) {
		buf = append(buf, 0) // empty header tag buffer
	}
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf[0:4], uint32(len(buf)-4))
	binary.BigEndian.PutUint32(buf[4:8], uint32(corr))
	_, err := bw.Write(buf)
	if cap(buf) <= maxPooledBuffer {
		*bp = buf
		encodeBufPool.Put(bp)
	}
	return err
}

// writeBody writes the response header for it and then its BodyWriter.
func writeBody(bw *bufio.Writer, rw *ResponseWriter, it *item) error {
	body := it.reply.Body
	n := body.Len()
	var hdr [9]byte
	hdrLen := 8
	if responseHeaderFlexible(it.req.Key, it.req.Msg.IsFlexible()) {
		hdrLen = 9 // hdr[8] is the empty tag buffer
	}
	if n < 0 || n > math.MaxInt32-hdrLen {
		return fmt.Errorf("%w: Len %d", ErrBodyLength, n)
	}
	binary.BigEndian.PutUint32(hdr[0:4], uint32(hdrLen-4+n))
	binary.BigEndian.PutUint32(hdr[4:8], uint32(it.req.CorrelationID))
	if _, err := bw.Write(hdr[:hdrLen]); err != nil {
		return err
	}
	rw.n = 0
	if err := body.WriteTo(rw); err != nil {
		return fmt.Errorf("writing %s body: %w", kmsg.NameForKey(it.req.Key), err)
	}
	if rw.n != n {
		return fmt.Errorf("%w: %s body wrote %d bytes, Len said %d", ErrBodyLength, kmsg.NameForKey(it.req.Key), rw.n, n)
	}
	return nil
}
