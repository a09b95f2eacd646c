package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shale-io/shale/infra/freeport"
	"github.com/shale-io/shale/infra/natsembed"
	"github.com/shale-io/shale/infra/objstore/faultproxy"
	"github.com/shale-io/shale/internal/proctest/child"
)

// S3 credentials the suite gives versitygw and the nodes.
const (
	s3Access = "shalechaosaccess"
	s3Secret = "shalechaossecret0123456789"
	s3Region = "us-east-1"
	s3Bucket = "chaos"
)

// childEnvVar, when set in a process's environment, makes MaybeRunChild
// run the named helper instead of the caller's main: the suite starts its
// NATS servers as child processes of its own binary, so that it can kill
// -9 and pause them.
const childEnvVar = "SHALE_CHAOS_CHILD"

// MaybeRunChild runs a helper process and exits if this process was
// started as one (see childEnvVar); otherwise it returns at once. Call it
// first in main and in TestMain.
func MaybeRunChild() {
	switch os.Getenv(childEnvVar) {
	case "":
		return
	case "nats":
		os.Exit(runNATSChild())
	default:
		fmt.Fprintln(os.Stderr, "shale-chaos: unknown child", os.Getenv(childEnvVar))
		os.Exit(2)
	}
}

// runNATSChild runs one NATS server (natsembed) from CHAOS_NATS_* variables
// until SIGTERM.
func runNATSChild() int {
	port, _ := strconv.Atoi(os.Getenv("CHAOS_NATS_PORT"))
	cfg := natsembed.Config{StoreDir: os.Getenv("CHAOS_NATS_DIR"), Port: port,
		ServerName: os.Getenv("CHAOS_NATS_NAME"), ReadyTimeout: 30 * time.Second,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if rp := os.Getenv("CHAOS_NATS_ROUTE_PORT"); rp != "" {
		p, _ := strconv.Atoi(rp)
		cfg.Cluster = &natsembed.ClusterConfig{Name: "chaos", Port: p, Routes: strings.Split(os.Getenv("CHAOS_NATS_ROUTES"), ",")}
	}
	srv, err := natsembed.Start(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nats child:", err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	srv.Shutdown()
	return 0
}

// Cluster is what the suite runs: NATS (one server or three), versitygw
// behind a fault proxy, and the Shale nodes, all on 127.0.0.1, all its
// own child processes (or goroutines: the proxy).
type Cluster struct {
	cfg   *Config
	dir   string
	nats  []*child.Process
	natsP []int // client ports
	s3    *child.Process
	s3Dir string
	s3URL string // versitygw
	proxy *faultproxy.FaultProxy
	Nodes []*Node
	net   *netFaults
	log   *slog.Logger
}

// Node is one shale serve process. Its Process is made by startNode, once
// its ports are chosen; every run appends its output to Log.
type Node struct {
	*child.Process
	Name  string
	Log   string // the log file of every run
	ID    int32
	Kafka string
	Admin string
	Dir   string
	Gid   uint32
	env   []string
}

// startCluster starts everything and waits until every node is ready and
// the controller sees them all.
func startCluster(ctx context.Context, cfg *Config, log *slog.Logger) (*Cluster, error) {
	c := &Cluster{cfg: cfg, dir: cfg.Out, log: log}
	if err := c.startNATS(); err != nil {
		return c, err
	}
	if err := c.startS3(); err != nil {
		return c, err
	}
	if cfg.needNet {
		c.net = newNetFaults(log)
	} else {
		c.net = &netFaults{why: "the schedule has no network partitions", rules: map[string][]string{}, log: log}
	}
	var urls []string
	for _, p := range c.natsP {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	for i := range cfg.Nodes {
		id := int32(i + 1)
		dir := filepath.Join(c.dir, fmt.Sprintf("node-%d", id))
		env := []string{"AWS_ACCESS_KEY_ID=" + s3Access, "AWS_SECRET_ACCESS_KEY=" + s3Secret, "AWS_REGION=" + s3Region}
		n := &Node{Name: fmt.Sprintf("node-%d", id), Log: filepath.Join(c.dir, fmt.Sprintf("node-%d.log", id)), ID: id, Dir: dir, env: env}
		if c.net.ok {
			n.Gid = 40000 + uint32(os.Getpid()%1000)*10 + uint32(id)
		}
		c.Nodes = append(c.Nodes, n)
	}
	for _, n := range c.Nodes {
		if err := c.startNode(ctx, n, urls); err != nil {
			return c, err
		}
	}
	for _, n := range c.Nodes {
		if err := c.waitReady(ctx, n, 60*time.Second); err != nil {
			return c, err
		}
	}
	return c, nil
}

// startNode gives a node free ports and starts it, and when a port was
// taken between choosing and binding it (the node exits at once), does
// so again, up to three times.
func (c *Cluster) startNode(ctx context.Context, n *Node, natsURLs []string) error {
	var lastErr error
	for range 3 {
		kafka, err := freeport.Addr()
		if err != nil {
			return err
		}
		admin, err := freeport.Addr()
		if err != nil {
			return err
		}
		n.Kafka, n.Admin = kafka, admin
		args := []string{"serve", "--node-id", fmt.Sprint(n.ID), "--data-dir", n.Dir, "--listen", kafka, "--admin-listen", admin,
			"--nats", strings.Join(natsURLs, ","), "--nats-replicas", fmt.Sprint(len(c.nats)),
			"--broker-session-timeout", c.cfg.Session.String(), "--controller-lease", c.cfg.Session.String(),
			"--replica-lag-time-max", "3s",
			"--s3-endpoint", c.proxy.URL, "--s3-bucket", s3Bucket, "--s3-region", s3Region, "--s3-path-style=true",
			"--s3-request-timeout", "5s",
			"--tiering-interval", "500ms", "--remote-orphan-grace", c.cfg.OrphanGrace.String(),
			"--retention-check-interval", "1s",
			// Cluster-wide, as an operator who promises no loss with one
			// node's disk gone sets it: the internal topics
			// (__consumer_offsets) inherit it, so their followers join the
			// ELR when the ISR shrinks to the leader (wipe-last-isr, seed 41:
			// OFFSET-REGRESSION with the default of 1).
			"--topic-default", "min.insync.replicas=2",
		}
		if c.cfg.ShareGroups {
			// The share group reads the plain topic from its start; a
			// record whose acceptance was lost comes back after 10 s.
			args = append(args, "--share-auto-offset-reset", "earliest", "--group-share-record-lock-duration", "10s",
				"--group-share-delivery-count-limit", "10")
		}
		n.Process = child.New(child.Config{Name: n.Name, Bin: c.cfg.Shale, Args: args, Env: n.env, Gid: n.Gid, LogPath: n.Log})
		if err := n.Start(); err != nil {
			return err
		}
		// A port taken by another process: the node exits within moments.
		exited := false
		poll(time.Second, 50*time.Millisecond, func() bool { exited = !n.Alive(); return exited || ctx.Err() != nil })
		if !exited {
			return nil
		}
		n.Stop(syscall.SIGKILL, 5*time.Second)
		lastErr = fmt.Errorf("%s exited at start (see %s)", n.Name, n.Log)
		b, _ := os.ReadFile(n.Log)
		if !strings.Contains(string(b), "address already in use") {
			return lastErr
		}
	}
	return lastErr
}

func (c *Cluster) startNATS() error {
	count := 1
	if c.cfg.NATSCluster {
		count = 3
	}
	var routes []string
	routePorts := make([]int, count)
	c.natsP = make([]int, count)
	for i := range count {
		for _, dst := range []*int{&c.natsP[i], &routePorts[i]} {
			a, err := freeport.Addr()
			if err != nil {
				return err
			}
			_, p, _ := strings.Cut(a, ":")
			*dst, _ = strconv.Atoi(p)
		}
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", routePorts[i]))
	}
	for i := range count {
		env := []string{childEnvVar + "=nats", "CHAOS_NATS_PORT=" + fmt.Sprint(c.natsP[i]),
			"CHAOS_NATS_DIR=" + filepath.Join(c.dir, fmt.Sprintf("nats-%d", i+1)), "CHAOS_NATS_NAME=" + fmt.Sprintf("chaos-nats-%d", i+1)}
		if count > 1 {
			env = append(env, "CHAOS_NATS_ROUTE_PORT="+fmt.Sprint(routePorts[i]), "CHAOS_NATS_ROUTES="+strings.Join(routes, ","))
		}
		p := child.New(child.Config{Name: fmt.Sprintf("nats-%d", i+1), Bin: c.cfg.Self, Env: env,
			LogPath: filepath.Join(c.dir, fmt.Sprintf("nats-%d.log", i+1))})
		if err := p.Start(); err != nil {
			return err
		}
		c.nats = append(c.nats, p)
	}
	for i := range c.nats {
		if !poll(30*time.Second, 50*time.Millisecond, func() bool { return dialOK(fmt.Sprintf("127.0.0.1:%d", c.natsP[i])) }) {
			return fmt.Errorf("nats-%d not listening after 30 s (see %s)", i+1, filepath.Join(c.dir, fmt.Sprintf("nats-%d.log", i+1)))
		}
	}
	return c.waitJetStream(60 * time.Second)
}

// waitJetStream waits until JetStream can place a bucket with as many
// replicas as there are NATS servers (a NATS cluster needs a meta leader
// and its peers first), by creating and deleting a probe bucket.
func (c *Cluster) waitJetStream(d time.Duration) error {
	nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", c.natsP[0]), nats.Timeout(5*time.Second))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	var last error
	if !poll(d, 250*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, last = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "shale_chaos_probe", Replicas: len(c.nats)})
		if last != nil {
			return false
		}
		js.DeleteKeyValue(ctx, "shale_chaos_probe")
		return true
	}) {
		return fmt.Errorf("JetStream not ready on %d NATS servers after %v: %v", len(c.nats), d, last)
	}
	return nil
}

func (c *Cluster) startS3() error {
	c.s3Dir = filepath.Join(c.dir, "s3")
	if err := os.MkdirAll(filepath.Join(c.s3Dir, s3Bucket), 0o755); err != nil {
		return err
	}
	addr, err := freeport.Addr()
	if err != nil {
		return err
	}
	c.s3URL = "http://" + addr
	c.s3 = child.New(child.Config{Name: "versitygw", Bin: c.cfg.VersityGW, Args: []string{"--access", s3Access, "--secret", s3Secret, "--region", s3Region,
		"--port", addr, "--quiet", "posix", c.s3Dir}, LogPath: filepath.Join(c.dir, "versitygw.log")})
	if err := c.s3.Start(); err != nil {
		return err
	}
	if !poll(30*time.Second, 50*time.Millisecond, func() bool { return dialOK(addr) }) {
		return fmt.Errorf("versitygw not listening after 30 s")
	}
	c.proxy, err = faultproxy.NewFaultProxy(c.s3URL)
	return err
}

// waitReady polls the node's /readyz.
func (c *Cluster) waitReady(ctx context.Context, n *Node, d time.Duration) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	ok := poll(d, 100*time.Millisecond, func() bool {
		if ctx.Err() != nil || !n.Alive() {
			return true
		}
		resp, err := hc.Get("http://" + n.Admin + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case !n.Alive():
		return fmt.Errorf("%s exited before it was ready (see %s)", n.Name, n.Log)
	case !ok:
		return fmt.Errorf("%s not ready after %v", n.Name, d)
	}
	return nil
}

// seeds are the nodes' Kafka addresses.
func (c *Cluster) seeds() []string {
	var s []string
	for _, n := range c.Nodes {
		s = append(s, n.Kafka)
	}
	return s
}

// Close stops everything the cluster started, nodes first.
func (c *Cluster) Close() {
	var errs []error
	for _, n := range c.Nodes {
		if n.Process != nil && n.Alive() { // nil: never started
			errs = append(errs, n.Kill())
		}
	}
	if c.net != nil {
		c.net.clear()
	}
	if c.proxy != nil {
		c.proxy.Close()
	}
	if c.s3 != nil && c.s3.Alive() {
		errs = append(errs, c.s3.Kill())
	}
	for _, p := range c.nats {
		if p.Alive() {
			errs = append(errs, p.Kill())
		}
	}
	if err := errors.Join(errs...); err != nil {
		c.log.Warn("cluster close", "err", err)
	}
}

// poll calls cond every interval until it returns true or d passes.
func poll(d, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
	return true
}
