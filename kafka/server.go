package kafka

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Server accepts Kafka client connections and serves them from a Registry.
//
// Shutdown order: stop accepting (listeners are closed), stop reading new
// requests on every connection, let the requests already read be handled
// and their replies (including Reply.Wait) be written, then close the
// connections. If Shutdown's context ends first, the remaining connections
// are closed at once and their contexts cancelled.
//
// Lock order: s.shutdown (the sync.Once of Shutdown) before s.mu. Holding
// s.mu, Shutdown closes listeners and calls conn.stopReading and
// conn.forceClose, which take no lock (an atomic, the context's cancel and
// the socket). The slow-request log's slowLog.mu is a leaf: it is taken on
// a connection's goroutine, never with s.mu held, and nothing is locked
// under it. The connections' goroutines take s.mu only to untrack
// themselves, holding nothing else; s.conns.Wait runs without s.mu.
type Server struct {
	cfg ServerConfig
	reg *Registry
	log *slog.Logger

	// Set by NewServer, then read-only. timed: the connections stamp each
	// request's stages (an observer or the slow-request log wants them).
	stageObserver StageObserver // cfg.Observer when it implements StageObserver
	slow          *slowLog      // nil when cfg.SlowRequestThreshold is zero
	handshakeLog  slowLog       // rate limit of the failed-handshake log lines
	limitLog      slowLog       // rate limit of the refused-connection log lines
	timed         bool

	nextConnID atomic.Uint64
	conns      sync.WaitGroup // one per connection, Done when all its goroutines have returned
	shutdown   sync.Once
	closing    chan struct{} // closed when Shutdown starts

	mu struct {
		sync.Mutex
		listeners map[net.Listener]struct{}
		conns     map[*conn]struct{}
		closed    bool // set once by Shutdown; no listener or connection is added after
		// The connections counted against cfg.Connections: all of
		// them, and by client address.
		total int
		perIP map[netip.Addr]int
	}
}

// NewServer returns a server for reg. Zero fields of cfg take their defaults;
// an invalid cfg makes Serve fail. A nil log discards logs.
func NewServer(cfg ServerConfig, reg *Registry, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg.Defaults(), reg: reg, log: log, closing: make(chan struct{})}
	s.stageObserver, _ = s.cfg.Observer.(StageObserver)
	if s.cfg.SlowRequestThreshold > 0 {
		s.slow = &slowLog{threshold: s.cfg.SlowRequestThreshold}
	}
	s.timed = s.cfg.Observer != nil || s.slow != nil
	s.mu.listeners = make(map[net.Listener]struct{})
	s.mu.conns = make(map[*conn]struct{})
	s.mu.perIP = make(map[netip.Addr]int)
	return s
}

// Serve accepts connections on ln until Shutdown, and then returns
// ErrServerClosed; it closes ln. It may be called for several listeners
// concurrently. Other accept errors are retried with a backoff unless ln
// was closed by someone else, which returns the error.
func (s *Server) Serve(ln net.Listener) error {
	return s.ServeListener(ln, Listener{Name: s.cfg.ListenerName})
}

// ServeListener is Serve for one named listener: its connections carry
// l.Name in ConnInfo and, when l.TLS is set, start with a TLS handshake.
func (s *Server) ServeListener(ln net.Listener, l Listener) error {
	if l.Name == "" {
		l.Name = s.cfg.ListenerName
	}
	if l.HandshakeTimeout <= 0 {
		l.HandshakeTimeout = defaultHandshakeTimeout
	}
	if err := s.cfg.Validate(); err != nil {
		ln.Close()
		return err
	}
	if !s.trackListener(ln) {
		ln.Close()
		return ErrServerClosed
	}
	defer s.untrackListener(ln)

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-s.closing:
				return ErrServerClosed
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("kafka: accept failed, retrying", "listener", l.Name, "backoff", backoff, "err", err)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-s.closing:
				t.Stop()
				return ErrServerClosed
			}
			continue
		}
		backoff = 0
		s.startConn(nc, &l)
	}
}

// startConn registers nc and starts its goroutines, or closes it when the
// server is shutting down or the connection is over a limit
// (cfg.Connections).
func (s *Server) startConn(nc net.Conn, l *Listener) {
	c := newConn(s, nc, s.nextConnID.Add(1), l)
	c.addr, c.hasAddr = connAddr(nc)
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		c.cancel()
		nc.Close()
		return
	}
	if reason, err := s.admitLocked(l, c.addr, c.hasAddr); err != nil {
		s.mu.Unlock()
		c.cancel()
		s.refuse(nc, l, reason, err)
		return
	}
	s.mu.conns[c] = struct{}{}
	s.conns.Add(1)
	s.mu.Unlock()
	if o := s.cfg.ConnObserver; o != nil {
		o.ObserveConnectionOpened(l.Name)
	}
	go func() {
		defer s.conns.Done()
		defer s.untrackConn(c)
		c.serve()
	}()
}

// Shutdown stops the server gracefully (see Server) and returns when every
// connection is closed, or ctx's error when ctx ends first, after closing the
// remaining connections. It is idempotent and safe to call concurrently.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdown.Do(func() {
		s.mu.Lock()
		s.mu.closed = true
		close(s.closing)
		for ln := range s.mu.listeners {
			ln.Close()
		}
		for c := range s.mu.conns {
			c.stopReading()
		}
		s.mu.Unlock()
	})

	done := make(chan struct{})
	go func() {
		s.conns.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.mu.conns {
			c.forceClose()
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}

func (s *Server) trackListener(ln net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return false
	}
	s.mu.listeners[ln] = struct{}{}
	return true
}

func (s *Server) untrackListener(ln net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.mu.listeners, ln)
}

func (s *Server) untrackConn(c *conn) {
	s.mu.Lock()
	delete(s.mu.conns, c)
	s.releaseLocked(c)
	s.mu.Unlock()
	if o := s.cfg.ConnObserver; o != nil {
		o.ObserveConnectionClosed(c.info.Listener)
	}
}

// slowLogBurst is how many slow-request lines one Server logs per second at
// most, so that a stall, which makes every request slow at once, does not
// flood the log.
const slowLogBurst = 5

// slowLog is the slow-request log's threshold and rate limit: at most
// slowLogBurst lines in each one-second window. Its methods are safe for
// concurrent use; the lock is taken only for requests over the threshold.
type slowLog struct {
	threshold time.Duration

	mu struct {
		sync.Mutex
		window     time.Time // start of the current window
		logged     int       // lines logged in the window
		suppressed int64     // lines held back since the last one logged
	}
}

// allow reports whether a slow request seen at now may be logged and, when
// it may, how many were held back since the last line logged (and resets
// that count).
func (l *slowLog) allow(now time.Time) (ok bool, suppressed int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.mu.window) >= time.Second || now.Before(l.mu.window) {
		l.mu.window, l.mu.logged = now, 0
	}
	if l.mu.logged >= slowLogBurst {
		l.mu.suppressed++
		return false, 0
	}
	l.mu.logged++
	suppressed, l.mu.suppressed = l.mu.suppressed, 0
	return true, suppressed
}
