package broker

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sys/unix"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/buildinfo"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/partition"
)

// healthCheckTimeout bounds each part of a health check that waits on
// another system (NATS, the bucket), so that `shale doctor` gets an answer
// naming what did not answer rather than a timeout.
const healthCheckTimeout = 5 * time.Second

// healthHandler serves GET /v1/health/checks (adminapi.NodeHealth).
func (n *Node) healthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		h := n.health(r.Context())
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(h)
	})
}

func (n *Node) health(ctx context.Context) adminapi.NodeHealth {
	start := time.Now()
	h := adminapi.NodeHealth{NodeID: n.cfg.NodeID, KafkaAddress: n.cfg.Advertise, Version: buildinfo.Read().Line(),
		NATS: n.natsHealth(ctx), Disk: n.diskHealth(), Certificates: n.certificateHealth()}
	if n.store != nil && n.replicas != nil && n.ctrl != nil {
		h.Controller = n.controllerID() == n.cfg.NodeID
		var leading []*partition.Replica
		leading, h.UnderReplicated, h.Offline = n.countPartitions(h.Controller)
		h.Bucket = n.bucketHealth(ctx, leading)
	}
	h.Time = time.Now()
	h.TookSeconds = h.Time.Sub(start).Seconds()
	return h
}

// natsHealth reads the connection's state and the replication of the
// JetStream streams behind the control plane's buckets (KV_shale_*).
func (n *Node) natsHealth(ctx context.Context) adminapi.NATSHealth {
	out := adminapi.NATSHealth{Streams: []adminapi.StreamHealth{}}
	if n.nc == nil {
		out.Error = "not connected yet"
		return out
	}
	out.Connected = n.nc.IsConnected()
	out.Server = n.nc.ConnectedUrlRedacted()
	js, err := jetstream.New(n.nc)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, healthCheckTimeout)
	defer cancel()
	streams := js.ListStreams(ctx)
	for info := range streams.Info() {
		if !strings.HasPrefix(info.Config.Name, "KV_shale_") {
			continue
		}
		sh := adminapi.StreamHealth{Name: info.Config.Name, Replicas: info.Config.Replicas, Peers: []adminapi.StreamPeer{}}
		if c := info.Cluster; c != nil {
			sh.Leader = c.Leader
			for _, p := range c.Replicas {
				sh.Peers = append(sh.Peers, adminapi.StreamPeer{Name: p.Name, Current: p.Current, Offline: p.Offline, Lag: p.Lag})
			}
		} else {
			sh.Leader = "(single server)"
		}
		out.Streams = append(out.Streams, sh)
	}
	if err := streams.Err(); err != nil {
		out.Error = err.Error()
	}
	slices.SortFunc(out.Streams, func(a, b adminapi.StreamHealth) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// bucketHealth probes the cold tier (a write, read and delete of a probe
// object) and adds the tiering loop's figures; nil without a cold tier.
func (n *Node) bucketHealth(ctx context.Context, leading []*partition.Replica) *adminapi.BucketHealth {
	m := n.Tiering()
	if m == nil {
		return nil
	}
	bh := &adminapi.BucketHealth{Location: n.bucketLocation()}
	if n.cfg.S3Endpoint != "" {
		bh.Location += " at " + n.cfg.S3Endpoint
	}
	st := m.Stats()
	bh.OrphansDeleted = st.OrphansDeleted
	if rl := n.RemoteLog(); rl != nil {
		remote := func(topic string, p int32) []controlplane.RemoteSegment {
			t, ok := n.store.Topic(topic)
			if !ok {
				return nil
			}
			return rl.ListRemoteSegments(t.ID, p)
		}
		for _, e := range rl.QuarantineEntries() {
			bh.QuarantinedEntries++
			if e.Segment != nil {
				bh.QuarantinedBytes += e.Segment.Size
			}
		}
		for _, p := range tierStatusOf(n.cfg.NodeID, leading, remote, "").Partitions {
			bh.UploadLagBytes += p.UploadLagBytes
			bh.UploadLagSegments += int64(p.UploadLagSegments)
		}
	}
	pctx, cancel := context.WithTimeout(ctx, healthCheckTimeout)
	defer cancel()
	b, err := n.openBucket(pctx)
	if err == nil {
		err = objstore.Probe(pctx, b, n.probeKey("doctor"))
		b.Close()
	}
	if err != nil {
		bh.Error = err.Error()
	} else {
		bh.Reachable = true
	}
	return bh
}

// diskHealth is the filesystem of the data directory.
func (n *Node) diskHealth() adminapi.DiskHealth {
	d := adminapi.DiskHealth{Path: n.cfg.DataDir}
	var fs unix.Statfs_t
	if err := unix.Statfs(n.cfg.DataDir, &fs); err == nil {
		d.TotalBytes = fs.Blocks * uint64(fs.Bsize)
		d.FreeBytes = fs.Bavail * uint64(fs.Bsize)
	}
	if m := n.Tiering(); m != nil {
		d.Full = m.Stats().DiskFull
	}
	return d
}

// certificateHealth reads the node's certificate files: each TLS
// listener's, the admin listener's and the NATS client's.
func (n *Node) certificateHealth() []adminapi.CertificateHealth {
	out := []adminapi.CertificateHealth{}
	seen := map[string]bool{}
	add := func(use, path string) {
		if path == "" || seen[use+"\x00"+path] {
			return
		}
		seen[use+"\x00"+path] = true
		out = append(out, readCertificate(use, path))
	}
	for _, l := range n.cfg.ListenerConfigs() {
		if l.TLS() {
			add("listener "+l.Name, n.cfg.ListenerTLS(l.Name).CertFile)
		}
	}
	add("admin", n.cfg.AdminSSLCertificateLocation)
	add("nats", n.cfg.NATSTLSCert)
	return out
}

// readCertificate parses the first certificate of the PEM file at path.
func readCertificate(use, path string) adminapi.CertificateHealth {
	c := adminapi.CertificateHealth{Use: use, Path: path}
	b, err := os.ReadFile(path)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		c.Error = "no PEM certificate"
		return c
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		c.Error = fmt.Sprintf("parsing: %v", err)
		return c
	}
	c.Subject, c.NotAfter = cert.Subject.String(), cert.NotAfter
	return c
}
