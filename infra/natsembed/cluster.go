package natsembed

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/shale-io/shale/infra/freeport"
)

// ClusterReadyTimeout bounds how long StartCluster waits for a JetStream
// meta leader that can place a replica on every member, once every member
// is up.
const ClusterReadyTimeout = 30 * time.Second

// StartCluster starts an n-node NATS cluster with clustered JetStream on
// 127.0.0.1, each member with random client and route ports and its store
// under baseDir/<name>, and waits until the cluster has a JetStream meta
// leader and every member is current with it. It is meant for tests and
// local experiments. Logs go to slog.Default() unless WithLogger says
// otherwise. On error
// every member already started is shut down. The caller shuts the returned
// servers down.
func StartCluster(n int, baseDir string, opts ...ClusterOption) ([]*Server, error) {
	var co clusterOptions
	for _, o := range opts {
		o(&co)
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: cluster size %d", ErrInvalidConfig, n)
	}
	routePorts := make([]int, n)
	for i := range routePorts {
		p, err := freeport.Port()
		if err != nil {
			return nil, err
		}
		routePorts[i] = p
	}
	routes := make([]string, n)
	for i, p := range routePorts {
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", p)
	}
	routesOf := func(from int) []string {
		if co.routeVia == nil {
			return routes
		}
		var out []string
		for to := range routes {
			if to != from {
				out = append(out, co.routeVia(from, to, fmt.Sprintf("127.0.0.1:%d", routePorts[to])))
			}
		}
		return out
	}
	servers := make([]*Server, 0, n)
	stopAll := func() {
		for _, s := range servers {
			s.Shutdown()
		}
	}
	advertise := ""
	if co.routeVia != nil {
		// A server that learns of a peer from another dials the peer's
		// advertised route address directly (an implicit route, around
		// the proxies); one that accepts nothing makes it fail.
		advertise = unroutableRoute
	}
	for i := range n {
		name := fmt.Sprintf("shale-nats-%d", i+1)
		s, err := Start(Config{
			StoreDir:   filepath.Join(baseDir, name),
			ServerName: name,
			Logger:     co.logger,
			Cluster: &ClusterConfig{
				Name:        "shale-test",
				Port:        routePorts[i],
				Routes:      routesOf(i),
				NoAdvertise: co.routeVia != nil,
				Advertise:   advertise,
			},
		})
		if err != nil {
			stopAll()
			return nil, err
		}
		servers = append(servers, s)
	}
	err := pollUntil(ClusterReadyTimeout, func() bool {
		leaders, placeable := 0, 0
		for _, s := range servers {
			if s.ns.JetStreamIsLeader() {
				leaders++
				// The peers the meta leader can place a replica on: online,
				// with JetStream and with current stats. Until every member's
				// stats have reached the leader, an R3 stream is refused with
				// "no suitable peers for placement".
				placeable = len(s.ns.JetStreamClusterPeers())
			}
			if !s.ns.JetStreamIsCurrent() {
				return false
			}
		}
		return leaders == 1 && placeable == n
	})
	if err != nil {
		stopAll()
		return nil, fmt.Errorf("%w: no JetStream meta leader: %v", ErrNotReady, err)
	}
	return servers, nil
}

// ClusterOption adjusts StartCluster.
type ClusterOption func(*clusterOptions)

type clusterOptions struct {
	logger   *slog.Logger
	routeVia func(from, to int, target string) string
}

// unroutableRoute is the route address advertised under WithRouteVia: the
// TCP port 1 of the loopback, where nothing listens.
const unroutableRoute = "127.0.0.1:1"

// WithRouteVia makes member from (0-based) reach member to through the URL
// via returns for to's route address target (host:port), such as a proxy
// a test can cut. No route bypasses it: the members advertise a route
// address that accepts nothing, and no member addresses to clients.
func WithRouteVia(via func(from, to int, target string) string) ClusterOption {
	return func(o *clusterOptions) { o.routeVia = via }
}

// WithLogger sends every member's logs to l.
func WithLogger(l *slog.Logger) ClusterOption {
	return func(o *clusterOptions) { o.logger = l }
}
