package kafka

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// conn serves one client connection with three goroutines: the reader
// (serve's own goroutine), the dispatcher and the writer. They hand requests
// on in order through two bounded channels, reader -> dispatcher -> writer,
// and each closes its outgoing channel when it stops, so the connection
// drains in order and the writer is the last to finish.
type conn struct {
	s    *Server
	nc   net.Conn
	info ConnInfo
	log  *slog.Logger

	// ctx is passed to handlers and Reply.Wait; cancel is called when the
	// connection closes or is forced down.
	ctx    context.Context
	cancel context.CancelFunc

	stopping atomic.Bool // no new request is read once set
	// tls: nc is a *tls.Conn whose handshake serve runs first, within
	// handshakeTimeout.
	tls              bool
	handshakeTimeout time.Duration
	mapper           *SSLPrincipalMapper // of a TLS listener's client certificates
	inflight         atomic.Int64        // requests read and not yet written or dropped
	// mutedUntil (unix nanoseconds) holds the dispatcher after a throttled
	// reply (KIP-219); see throttle.go.
	mutedUntil atomic.Int64
	// preauth: a SASL listener's connection before its first successful
	// authentication. The reader then caps each request at
	// SASLMaxReceiveBytes and reads the next one only once the last is
	// answered (Kafka's SaslServerAuthenticator reads no receive while a
	// response is unsent), so that an unauthenticated client holds at most
	// one request in the node. Cleared by the dispatcher when the
	// authentication succeeds, before its reply goes to the writer.
	preauth atomic.Bool
	// addr is the client address the connection counts against in
	// ServerConfig.Connections, when hasAddr. Set before serve, then
	// read-only.
	addr    netip.Addr
	hasAddr bool
}

// item is one request on its way through the connection.
type item struct {
	req   Request
	h     Handler       // nil when early is set
	early kmsg.Response // answer known at decode time (UNSUPPORTED_VERSION)
	frame *[]byte       // pooled frame the request may alias; released after the reply
	reply Reply
	// answered, set on a request read before authentication (conn.preauth),
	// is closed by drop: the reader waits for it before reading on.
	answered chan struct{}
	// holdUntil, when set, is when the writer may write the reply: the
	// answer to a failed authentication (FailedAuthenticationDelay).
	holdUntil time.Time

	// Timings, kept only when the server has an observer or a slow-request
	// log (Server.timed): read is when the request was read and decoded
	// (kept on a SASL listener too, for the session's end, see
	// saslState.check), the rest are offsets from read (see RequestStages). started and
	// handled and handlerWait are set by the dispatcher; picked,
	// waitStart, waitEnd and waited by the writer.
	read               time.Time
	started, handled   time.Duration // handler called, returned
	handlerWait        time.Duration // of started..handled, the waits the handler reported (Request.Waited)
	picked             time.Duration // the writer took the reply up
	waitStart, waitEnd time.Duration // Reply.Wait called, returned; valid when waited
	waited             bool
}

// stages returns the breakdown of a request whose reply was written end
// after it was read, or, when handled is false, whose handler failed.
func (it *item) stages(end time.Duration, written bool) RequestStages {
	st := RequestStages{RequestQueue: it.started, Local: it.handled - it.started - it.handlerWait, Remote: it.handlerWait}
	if !written {
		st.Total = it.handled
		return st
	}
	st.Total = end
	sendFrom := it.picked
	if it.waited {
		st.ResponseQueue = it.waitStart - it.handled
		st.Remote += it.waitEnd - it.waitStart
		sendFrom = it.waitEnd
	} else {
		st.ResponseQueue = it.picked - it.handled
	}
	st.ResponseSend = end - sendFrom
	return st
}

func newConn(s *Server, nc net.Conn, id uint64, l *Listener) *conn {
	c := &conn{s: s, nc: nc, handshakeTimeout: l.HandshakeTimeout}
	if l.SASL == nil {
		c.mapper = l.PrincipalMapper // SASL names a SASL_SSL connection's principal
	}
	if l.TLS != nil {
		c.nc = tls.Server(nc, l.TLS)
		c.tls = true
	}
	c.info = ConnInfo{ID: id, Listener: l.Name, Remote: nc.RemoteAddr(), Principal: AnonymousPrincipal, draining: s.closing}
	c.log = s.log.With("conn", id, "listener", l.Name, "remote", c.info.Remote.String())
	if l.SASL != nil {
		c.info.sasl = newSASLState(l, c.log, &s.handshakeLog, s.cfg.AuthObserver)
		c.preauth.Store(true)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

// serve runs the connection until it is drained, then closes it.
func (c *conn) serve() {
	defer c.cancel()
	defer c.nc.Close()
	if c.tls && !c.handshake() {
		return
	}

	reqs := make(chan *item, c.s.cfg.ReadAhead)
	out := make(chan *item, c.s.cfg.ReadAhead)
	writerDone := make(chan struct{})
	go c.dispatch(reqs, out)
	go func() {
		defer close(writerDone)
		c.write(out)
	}()
	c.read(reqs)
	<-writerDone
}

// stopReading makes the reader stop after the frame it is reading; requests
// already read are still handled and answered. Safe to call from any
// goroutine, more than once.
func (c *conn) stopReading() {
	c.stopping.Store(true)
	c.nc.SetReadDeadline(time.Now())
}

// forceClose closes the socket and cancels the handlers' context.
func (c *conn) forceClose() {
	c.stopping.Store(true)
	c.cancel()
	c.nc.Close()
}

// read is the reader: it reads and decodes frames and passes them to the
// dispatcher, until EOF, bad input, stopReading or a closed connection. It
// closes reqs when it returns.
func (c *conn) read(reqs chan<- *item) {
	defer close(reqs)
	br := bufio.NewReaderSize(c.nc, readBufferSize)
	for {
		size, err := c.readSize(br)
		if err != nil {
			c.readEnded(err)
			return
		}
		if size < minFrameSize {
			c.log.Warn("kafka: closing connection", "err", fmt.Errorf("%w: %d", ErrFrameSize, size))
			return
		}
		preauth := c.preauth.Load()
		if preauth && size > c.s.cfg.SASLMaxReceiveBytes {
			c.refusePreauthFrame(size)
			return
		}
		if size > c.s.cfg.MaxRequestBytes {
			c.log.Warn("kafka: closing connection", "err",
				fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, size, c.s.cfg.MaxRequestBytes))
			return
		}
		frame := getFrame(int(size))
		if _, err := io.ReadFull(br, *frame); err != nil {
			putFrame(frame)
			c.readEnded(fmt.Errorf("reading %d-byte request: %w", size, err))
			return
		}
		d, err := c.s.reg.decodeFrame(*frame)
		if err != nil {
			putFrame(frame)
			c.log.Warn("kafka: closing connection", "err", err)
			return
		}
		it := &item{req: d.req, h: d.h, early: d.early, frame: frame}
		if c.s.timed || c.info.sasl != nil {
			it.read = time.Now()
		}
		it.req.Conn = &c.info
		if preauth {
			it.answered = make(chan struct{})
		}
		answered := it.answered
		c.inflight.Add(1)
		select {
		case reqs <- it:
		case <-c.ctx.Done():
			c.drop(it)
			return
		}
		if answered != nil {
			select {
			case <-answered:
			case <-c.ctx.Done():
				return
			}
		}
	}
}

// refusePreauthFrame ends a SASL connection whose request, read before
// authentication, is over SASLMaxReceiveBytes: a failed authentication, as
// Kafka's SaslServerAuthenticator fails it ("invalid receive size"),
// closed at once (Kafka delays only the answer it sends; there is none
// here), with a rate-limited Info line. It runs on the reader while no
// request is in flight (lock-step), so it may read the SASL state.
func (c *conn) refusePreauthFrame(size int32) {
	err := fmt.Errorf("%w: %d > %d", ErrSASLReceiveTooLarge, size, c.s.cfg.SASLMaxReceiveBytes)
	if ok, held := c.s.handshakeLog.allow(time.Now()); ok {
		c.log.Info("kafka: closing connection", "err", err, "suppressed", held)
	}
	if o := c.s.cfg.AuthObserver; o != nil {
		o.ObserveAuthentication(c.info.Listener, c.info.sasl.mech, false, err)
	}
}

// readSize reads the next size prefix. While requests are in flight, the
// idle timeout does not close the connection: the read is re-armed. Peek
// keeps a partial prefix buffered across deadlines.
func (c *conn) readSize(br *bufio.Reader) (int32, error) {
	for {
		var deadline time.Time
		if c.s.cfg.IdleTimeout > 0 {
			deadline = time.Now().Add(c.s.cfg.IdleTimeout)
		}
		c.nc.SetReadDeadline(deadline)
		// Checked after arming: a concurrent stopReading either sees our
		// deadline and overrides it, or set stopping before we load it.
		if c.stopping.Load() {
			return 0, errStopped
		}
		p, err := br.Peek(4)
		if err == nil {
			size := int32(binary.BigEndian.Uint32(p))
			br.Discard(4)
			return size, nil
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && !c.stopping.Load() && c.inflight.Load() > 0 {
			continue
		}
		return 0, err
	}
}

// errStopped: the reader stopped because of stopReading.
var errStopped = errors.New("stopped reading")

// readEnded logs why the reader stopped, quietly when it is the ordinary end
// of a connection.
func (c *conn) readEnded(err error) {
	var ne net.Error
	switch {
	case c.stopping.Load() || errors.Is(err, errStopped) || c.ctx.Err() != nil:
		c.log.Debug("kafka: stopped reading", "err", err)
	case errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed):
		c.log.Debug("kafka: client closed connection")
	case errors.As(err, &ne) && ne.Timeout():
		c.log.Info("kafka: closing idle connection", "idle_timeout", c.s.cfg.IdleTimeout)
	default:
		c.log.Warn("kafka: closing connection", "err", err)
	}
}

// dispatch is the dispatcher: it calls the handlers one request at a time in
// arrival order and passes the replies to the writer. After a handler error
// it stops the reader, drops what is still queued, and closes out, so that
// the replies to earlier requests still go out.
func (c *conn) dispatch(reqs <-chan *item, out chan<- *item) {
	defer close(out)
	failed := false
	timed := c.s.timed
	for it := range reqs {
		if failed || c.ctx.Err() != nil {
			c.drop(it)
			continue
		}
		c.waitUnmuted(c.ctx)
		if timed {
			it.started = time.Since(it.read)
		}
		var err error
		switch {
		case it.early != nil:
			it.reply = Reply{Response: it.early}
		case c.info.sasl != nil:
			// Judged by when it was read, as Kafka's Processor judges a
			// receive: a request read within the session is served,
			// however long it waited behind others or a throttle.
			if err = c.info.sasl.check(it.req.Key, it.read); err == nil {
				err = c.handle(it)
			}
		default:
			err = c.handle(it)
		}
		if c.info.sasl.closing() && err == nil {
			c.stopReading() // a failed authentication: this reply is the last
			if d := c.s.cfg.FailedAuthenticationDelay; d > 0 {
				it.holdUntil = time.Now().Add(d)
			}
		}
		if c.preauth.Load() && c.info.sasl.authenticated {
			c.preauth.Store(false) // before the reply that lets the reader on
		}
		if timed {
			it.handled = it.started
			if it.early == nil {
				it.handled = time.Since(it.read)
				it.handlerWait = min(it.req.waited, it.handled-it.started)
			}
		}
		if err == nil && it.early == nil {
			// Until the writer has sent this reply and muted the
			// connection from then on, hold the next request already.
			c.mute(it.req.throttle)
		}
		if err != nil {
			switch {
			case errors.Is(err, ErrSessionExpired):
				// Kafka's expired-connections-killed: at Debug, as Kafka logs it.
				c.log.Debug("kafka: closing connection", "err", err)
				if o := c.s.cfg.AuthObserver; o != nil {
					o.ObserveExpiredSession(c.info.Listener)
				}
			case errors.Is(err, ErrUnauthenticated):
				// A client's mistake, not the node's: rate-limited, at Info.
				if ok, held := c.s.handshakeLog.allow(time.Now()); ok {
					c.log.Info("kafka: closing connection", "err", err, "suppressed", held)
				}
			default:
				c.log.Error("kafka: closing connection after handler failure",
					"api", kmsg.NameForKey(it.req.Key), "version", it.req.Version, "correlation_id", it.req.CorrelationID, "err", err)
			}
			c.observe(it, err, false)
			c.drop(it)
			failed = true
			c.stopReading()
			continue
		}
		select {
		case out <- it:
		case <-c.ctx.Done():
			c.drop(it)
		}
	}
}

// handle calls the item's handler, recovering a panic, and validates the reply.
func (c *conn) handle(it *item) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v\n%s", ErrHandlerPanic, v, debug.Stack())
		}
	}()
	var start time.Time
	rq := c.s.cfg.RequestQuota
	if rq != nil && !rq.Active() {
		rq = nil
	}
	if rq != nil {
		start = time.Now()
	}
	reply, err := it.h(c.ctx, &it.req)
	if err != nil {
		return err
	}
	if err := reply.validate(&it.req); err != nil {
		return err
	}
	if rq != nil {
		work := max(time.Since(start)-it.req.waited, 0)
		it.req.Throttle(rq.RequestTime(&it.req, work))
	}
	if d := it.req.throttle; d > 0 {
		switch {
		case reply.Response != nil:
			setThrottle(reply.Response, d)
		case reply.Body != nil:
			if ts, ok := reply.Body.(ThrottleSetter); ok {
				ts.SetThrottle(throttleMillis(d))
			}
		}
	}
	it.reply = reply
	return nil
}

// observe reports a request whose reply was written (or, when written is
// false, whose handler failed) to the server's observer and slow-request
// log. It reads the clock once.
func (c *conn) observe(it *item, err error, written bool) {
	s := c.s
	if !s.timed {
		return
	}
	st := it.stages(time.Since(it.read), written)
	if s.slow != nil && st.Total > s.slow.threshold {
		c.logSlow(it, st, err) // before the observer: an observed request has been logged
	}
	switch {
	case s.stageObserver != nil:
		s.stageObserver.ObserveStages(&it.req, st, err)
	case s.cfg.Observer != nil:
		s.cfg.Observer.ObserveRequest(it.req.Key, it.req.Version, st.Total, err)
	}
}

// logSlow writes the slow-request line of it, unless the server's slow log
// is over its rate.
func (c *conn) logSlow(it *item, st RequestStages, err error) {
	ok, held := c.s.slow.allow(time.Now())
	if !ok {
		return
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	attrs := make([]slog.Attr, 0, 13)
	attrs = append(attrs,
		slog.String("api", kmsg.NameForKey(it.req.Key)),
		slog.Int("version", int(it.req.Version)),
		slog.Int("correlation_id", int(it.req.CorrelationID)))
	if it.req.ClientID != "" {
		attrs = append(attrs, slog.String("client_id", it.req.ClientID))
	}
	attrs = append(attrs,
		slog.Float64("total_ms", ms(st.Total)),
		slog.Float64("request_queue_ms", ms(st.RequestQueue)),
		slog.Float64("local_ms", ms(st.Local)),
		slog.Float64("remote_ms", ms(st.Remote)),
		slog.Float64("response_queue_ms", ms(st.ResponseQueue)),
		slog.Float64("response_send_ms", ms(st.ResponseSend)))
	if held > 0 {
		attrs = append(attrs, slog.Int64("suppressed", held))
	}
	if err != nil {
		attrs = append(attrs, slog.Any("err", err))
	}
	c.log.LogAttrs(context.Background(), slog.LevelInfo, "kafka: slow request", attrs...)
}

// drop releases a request that was answered or will not be: every item
// read ends in exactly one drop, which lets a pre-authentication reader on.
func (c *conn) drop(it *item) {
	c.inflight.Add(-1)
	putFrame(it.frame)
	it.frame = nil
	if it.answered != nil {
		close(it.answered)
	}
}
