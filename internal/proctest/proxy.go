package proctest

import (
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/shale-io/shale/infra/natsembed"
)

// Proxy forwards TCP connections from a 127.0.0.1 port to a target and can
// cut them: Cut(true) closes every open connection and makes new ones close
// at once, so whoever dials the proxy loses the target while everything
// else stays reachable; Cut(false) lets new connections through again. Tests
// put one in front of a node's NATS server (the node loses the control
// plane) or of a NATS route (the NATS cluster splits). Its goroutines end
// when the test ends.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

// NewProxy listens on 127.0.0.1 and forwards to target (host:port) until
// the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.accept() // ends when close closes the listener
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut cuts (true) or restores (false) the connections through the proxy.
func (p *Proxy) Cut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
	}
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go p.pipe(c, s) // each ends when either side is closed
		go p.pipe(s, c)
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

func (p *Proxy) close() {
	p.ln.Close()
	p.Cut(true)
}

// IsCut reports whether the proxy is cut.
func (p *Proxy) IsCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// RoutedNATS is a three-server NATS cluster whose every route goes
// through a Proxy, so that a test can split the cluster.
type RoutedNATS struct {
	Servers []*natsembed.Server

	mu      sync.Mutex
	proxies map[[2]int]*Proxy // by the (from, to) member indexes of the route
}

// StartRoutedNATS starts a RoutedNATS under dir; the servers shut down
// when the test ends.
func StartRoutedNATS(t testing.TB, dir string, logger *slog.Logger) *RoutedNATS {
	t.Helper()
	r := &RoutedNATS{proxies: map[[2]int]*Proxy{}}
	servers, err := natsembed.StartCluster(3, dir, natsembed.WithLogger(logger),
		natsembed.WithRouteVia(func(from, to int, target string) string {
			p := NewProxy(t, target)
			r.mu.Lock()
			r.proxies[[2]int{from, to}] = p
			r.mu.Unlock()
			return "nats://" + p.Addr()
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range servers {
			s.Shutdown()
		}
	})
	r.Servers = servers
	return r
}

// CutMember cuts every route to and from member m (Proxy.Cut).
func (r *RoutedNATS) CutMember(m int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, p := range r.proxies {
		if k[0] == m || k[1] == m {
			p.Cut(true)
		}
	}
}

// Heal lets every route through again.
func (r *RoutedNATS) Heal() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.proxies {
		p.Cut(false)
	}
}
