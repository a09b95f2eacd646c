package broker

import (
	"errors"
	"fmt"
	"net"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/kafka"
)

// boundListener is one Kafka listener the node has bound.
type boundListener struct {
	ln  net.Listener
	cfg kafka.Listener
}

// bindListeners binds every Kafka listener of n.cfg, before the node
// registers, so that a port 0 (tests) is advertised as the port bound, and
// loads the TLS files when a listener needs them. The inter-broker listener
// is n.listeners[0] and n.kafkaLn.
func (n *Node) bindListeners() error {
	var reloader *kafka.TLSReloader
	for _, l := range n.cfg.ListenerConfigs() {
		kl := kafka.Listener{Name: l.Name}
		if l.TLS() {
			if reloader == nil {
				var err error
				reloader, err = kafka.NewTLSReloader(kafka.TLSFiles{
					CertFile: n.cfg.SSLCertificateLocation, KeyFile: n.cfg.SSLKeyLocation,
					CAFile: n.cfg.SSLCALocation, ClientAuth: kafka.ClientAuth(n.cfg.SSLClientAuth),
				}, n.logger)
				if err != nil {
					return err
				}
			}
			kl.TLS = reloader.ServerConfig()
		}
		ln, err := net.Listen("tcp", l.Listen)
		if err != nil {
			return fmt.Errorf("listener %s: %w", l.Name, err)
		}
		n.listeners = append(n.listeners, boundListener{ln: ln, cfg: kl})
		if h, p, _ := net.SplitHostPort(l.Advertise); p == "0" {
			_, bound, _ := net.SplitHostPort(ln.Addr().String())
			n.cfg.SetListenerAdvertise(l.Name, net.JoinHostPort(h, bound))
		}
	}
	if len(n.listeners) == 0 {
		return fmt.Errorf("%w: no Kafka listener", config.ErrInvalidConfig)
	}
	n.kafkaLn = n.listeners[0].ln
	return nil
}

// serveListeners serves every bound listener until the server shuts down.
func (n *Node) serveListeners() {
	for _, bl := range n.listeners {
		n.goLoop(func() {
			if err := n.server.ServeListener(bl.ln, bl.cfg); err != nil && !errors.Is(err, kafka.ErrServerClosed) {
				n.logger.Error("kafka listener stopped", "listener", bl.cfg.Name, "err", err)
			}
		})
	}
}

// closeListeners closes every bound listener (Serve may not have started).
func (n *Node) closeListeners() {
	for _, bl := range n.listeners {
		bl.ln.Close()
	}
}

// ListenerAddr is the bound address of the Kafka listener named name, or ""
// when the node has none of that name.
func (n *Node) ListenerAddr(name string) string {
	for _, bl := range n.listeners {
		if bl.cfg.Name == name {
			return bl.ln.Addr().String()
		}
	}
	return ""
}
