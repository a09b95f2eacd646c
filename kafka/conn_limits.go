package kafka

import (
	"fmt"
	"net"
	"net/netip"
	"time"
)

// ConnectionLimits are Kafka's connection quotas (ConnectionQuotas). The
// limits are taken as they are: 0 allows no connection (Kafka's
// max.connections.per.ip may be 0 when overrides name the addresses that
// may connect); Kafka's defaults are math.MaxInt32, no limit in practice.
type ConnectionLimits struct {
	// MaxConnections is max.connections: the node's connections over all
	// its listeners. A connection accepted over it is closed at once,
	// unless it came on an inter-broker listener (Listener.InterBroker),
	// whose connections are counted but always accepted, as in Kafka.
	MaxConnections int
	// MaxConnectionsPerIP is max.connections.per.ip: the connections
	// from one client address, over all listeners (the inter-broker one
	// included, as in Kafka: give the other nodes' addresses an override
	// when they share one). A connection over it is closed at once.
	MaxConnectionsPerIP int
	// MaxConnectionsPerIPOverrides is max.connections.per.ip.overrides:
	// the limit of the addresses named, instead of MaxConnectionsPerIP.
	MaxConnectionsPerIPOverrides map[netip.Addr]int
}

// ConnObserver is told of every connection a Server opens, closes and
// refuses (Kafka's socket-server-metrics connection-count,
// connection-creation-total, connection-close-total, and the refusals of
// its connection quotas). reason is "max_connections" or
// "max_connections_per_ip". It must be safe for concurrent use and quick:
// it runs on the accepting and connection goroutines.
type ConnObserver interface {
	ObserveConnectionOpened(listener string)
	ObserveConnectionClosed(listener string)
	ObserveConnectionRejected(listener, reason string)
}

// Reasons a connection is refused at accept (ConnObserver).
const (
	RejectMaxConnections      = "max_connections"
	RejectMaxConnectionsPerIP = "max_connections_per_ip"
)

// connAddr is the client address a connection counts against, and ok
// false for a connection without an IP address (net.Pipe in tests), which
// per-address limits do not apply to.
func connAddr(nc net.Conn) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(nc.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

// admitLocked counts a new connection of l from addr, or reports why it is
// refused (a reason for ConnObserver and an error for the log).
// REQUIRES: s.mu held.
func (s *Server) admitLocked(l *Listener, addr netip.Addr, hasAddr bool) (reason string, err error) {
	if lim := s.cfg.Connections; lim != nil {
		if !l.InterBroker && s.mu.total >= lim.MaxConnections {
			return RejectMaxConnections, fmt.Errorf("the node already has the configured maximum of %d connections (max.connections)", lim.MaxConnections)
		}
		if hasAddr {
			max, ok := lim.MaxConnectionsPerIPOverrides[addr]
			if !ok {
				max = lim.MaxConnectionsPerIP
			}
			if s.mu.perIP[addr] >= max {
				return RejectMaxConnectionsPerIP, fmt.Errorf("address %s already has the configured maximum of %d connections (max.connections.per.ip)", addr, max)
			}
		}
	}
	s.mu.total++
	if hasAddr {
		s.mu.perIP[addr]++
	}
	return "", nil
}

// releaseLocked uncounts a connection admitted by admitLocked.
// REQUIRES: s.mu held.
func (s *Server) releaseLocked(c *conn) {
	s.mu.total--
	if c.hasAddr {
		if n := s.mu.perIP[c.addr] - 1; n > 0 {
			s.mu.perIP[c.addr] = n
		} else {
			delete(s.mu.perIP, c.addr)
		}
	}
}

// refuse closes a connection over a limit, with a rate-limited Info line
// (a client reconnecting in a loop would flood the log) and the observer's
// count, both before the close, so that the client's seeing the close
// means both happened.
func (s *Server) refuse(nc net.Conn, l *Listener, reason string, err error) {
	if o := s.cfg.ConnObserver; o != nil {
		o.ObserveConnectionRejected(l.Name, reason)
	}
	if ok, held := s.limitLog.allow(time.Now()); ok {
		s.log.Info("kafka: connection refused", "listener", l.Name, "remote", nc.RemoteAddr().String(), "err", err, "suppressed", held)
	}
	nc.Close()
}
