package replicationtest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// natsProxy forwards one node's NATS connections to the server, and can
// cut them: cut closes every open connection and makes new ones close at
// once, so the node loses the control plane while its Kafka listener and
// its peers stay reachable. Its goroutines end when the test ends.
type natsProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

// newNATSProxy listens on 127.0.0.1 and forwards to target (host:port).
func newNATSProxy(t testing.TB, target string) *natsProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &natsProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.accept() // ends when Close closes the listener
	t.Cleanup(p.close)
	return p
}

// url is the NATS URL a node is given.
func (p *natsProxy) url() string { return "nats://" + p.ln.Addr().String() }

func (p *natsProxy) accept() {
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

func (p *natsProxy) pipe(dst, src net.Conn) {
	io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// setCut cuts (true) or restores (false) the node's control plane.
func (p *natsProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
	}
}

func (p *natsProxy) close() {
	p.ln.Close()
	p.setCut(true)
}
