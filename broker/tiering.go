package broker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/infra/objstore/fsbucket"
	"github.com/shale-io/shale/infra/objstore/s3bucket"
	"github.com/shale-io/shale/tiering"
)

// openBucket opens the cold tier: S3 when s3_bucket is set, else the
// filesystem bucket under <data dir>/bucket; either way wrapped with retries
// (jittered backoff on transient failures) and request metrics.
func (n *Node) openBucket(ctx context.Context) (objstore.Bucket, error) {
	var b objstore.Bucket
	if n.cfg.S3Bucket != "" {
		s3b, err := s3bucket.New(ctx, s3bucket.Config{Endpoint: n.cfg.S3Endpoint, Bucket: n.cfg.S3Bucket,
			Region: n.cfg.S3Region, PathStyle: n.cfg.S3PathStyle})
		if err != nil {
			return nil, fmt.Errorf("s3 bucket: %w", err)
		}
		b = s3b
	} else {
		fb, err := fsbucket.New(filepath.Join(n.cfg.DataDir, "bucket"))
		if err != nil {
			return nil, fmt.Errorf("filesystem bucket: %w", err)
		}
		b = fb
	}
	rc := objstore.RetryConfig{PerAttemptTimeout: n.cfg.S3RequestTimeout}
	rc.Defaults()
	return objstore.WithMetrics(objstore.WithRetries(b, rc), n.bucketSink()), nil
}

// bucketProbeTimeout bounds the start-up probe of the bucket: a store that
// does not answer (a paused server, a dropped route) delays a start by no
// more than this.
const bucketProbeTimeout = 15 * time.Second

// probeBucket proves at start that the cold tier can be written, read and
// deleted (objstore.Probe on the key shale-probe/node-<id> under s3_prefix).
// A bucket that refuses the probe for good (it does not exist, the
// credentials are wrong or may not write, the filesystem bucket cannot be
// written) is an error naming the bucket and the store's error, and the
// node does not start. A store that is only unreachable (transient errors
// after retries, or no answer within bucketProbeTimeout) is logged as an
// ERROR and the node starts: its hot data is local, and uploads and cold
// reads wait for the store as in any outage. It opens its own bucket and
// closes it.
func (n *Node) probeBucket(ctx context.Context) error {
	b, err := n.openBucket(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	pctx, cancel := context.WithTimeout(ctx, bucketProbeTimeout)
	defer cancel()
	err = objstore.Probe(pctx, b, n.probeKey("node"))
	where := n.bucketLocation()
	if n.cfg.S3Endpoint != "" {
		where += " at " + n.cfg.S3Endpoint
	}
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case objstore.IsRetryable(err) || errors.Is(err, context.DeadlineExceeded):
		n.logger.Error("cold tier bucket unreachable at start: starting; uploads and cold reads wait for it",
			"bucket", where, "err", err)
		return nil
	}
	return fmt.Errorf("cold tier bucket %s is not usable: %w", where, err)
}

// probeKey is the key of this node's probe object: shale-probe/WHAT-<id>
// under s3_prefix.
func (n *Node) probeKey(what string) string {
	key := fmt.Sprintf("shale-probe/%s-%d", what, n.cfg.NodeID)
	if prefix := strings.Trim(n.cfg.S3Prefix, "/"); prefix != "" {
		key = prefix + "/" + key
	}
	return key
}

// bucketLocation names the cold tier for the brokers' check that they share
// one bucket (tiering.Manager.Register).
func (n *Node) bucketLocation() string {
	if n.cfg.S3Bucket != "" {
		return "s3://" + n.cfg.S3Bucket
	}
	return filepath.Join(n.cfg.DataDir, "bucket")
}

// nodeTiering is the node's cold tier: the bucket, the remote segment
// metadata and the tiering loop. Owned by Node; stopped by stop.
type nodeTiering struct {
	bucket  objstore.Bucket
	meta    *controlplane.RemoteLog
	manager *tiering.Manager
}

// startTiering opens the bucket (the filesystem bucket under
// <data dir>/bucket unless S3 is configured) and the remote metadata, and
// starts the tiering loop over this node's replicas.
func (n *Node) startTiering(ctx context.Context) error {
	b, err := n.openBucket(ctx)
	if err != nil {
		return err
	}
	t := &nodeTiering{bucket: b}
	if t.meta, err = controlplane.OpenRemoteLog(ctx, n.store); err != nil {
		b.Close()
		return err
	}
	t.manager, err = tiering.New(tiering.Config{NodeID: n.cfg.NodeID, Bucket: b, Store: n.store, Meta: t.meta,
		Replicas: n.replicas.All, Prefix: n.cfg.S3Prefix, Interval: n.cfg.TieringInterval,
		OrphanGrace: n.cfg.OrphanGrace, IsController: func() bool { return n.controllerID() == n.cfg.NodeID },
		DataDir: n.cfg.DataDir, DiskHighWatermark: n.cfg.DiskHighWatermark, Logger: n.logger,
		Location: n.bucketLocation(), SharedBucket: n.cfg.S3Bucket != "", TopicDefaults: n.cfg.TopicDefaults})
	if err == nil {
		err = t.manager.Register(ctx)
	}
	if err != nil {
		t.meta.Close()
		b.Close()
		return err
	}
	t.manager.Start()
	n.tiering = t
	return nil
}

// stopTieringLoop stops the tiering loop; closeTieringMeta then closes the
// remote metadata and the bucket (with the other control-plane watchers).
// Both are safe when tiering never started.
func (n *Node) stopTieringLoop() {
	if n.tiering != nil {
		n.tiering.manager.Close()
	}
}

func (n *Node) closeTieringMeta() {
	if n.tiering != nil {
		n.tiering.meta.Close()
		n.tiering.bucket.Close()
	}
}

// Tiering exposes the tiering manager (for tools and tests); nil before Start.
func (n *Node) Tiering() *tiering.Manager {
	if n.tiering == nil {
		return nil
	}
	return n.tiering.manager
}

// RemoteLog exposes the remote segment metadata (for the fetch path, tools
// and tests); nil before Start.
func (n *Node) RemoteLog() *controlplane.RemoteLog {
	if n.tiering == nil {
		return nil
	}
	return n.tiering.meta
}

// Bucket exposes the cold tier's bucket (for tools and tests); nil before Start.
func (n *Node) Bucket() objstore.Bucket {
	if n.tiering == nil {
		return nil
	}
	return n.tiering.bucket
}
