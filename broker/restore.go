package broker

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/buildinfo"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/restore"
)

// The node's part in restores from the bucket (package restore): the
// controller publishes the format marker and the tiered topics'
// descriptors on each tiering interval, and any node runs a restore asked
// for on the admin API (adminapi.RestorePath).

// restorePublishLoop runs restore.Publisher while this node is the
// controller, every tiering interval, until ctx ends.
func (n *Node) restorePublishLoop(ctx context.Context) {
	if n.tiering == nil {
		return
	}
	pub := restore.NewPublisher(restore.PublisherConfig{Bucket: n.tiering.bucket, Prefix: n.cfg.S3Prefix,
		Topics: n.store.Topics,
		Tiered: func(t controlplane.Topic) bool {
			return n.replicas.TopicConfig(t).Bool(config.RemoteStorageEnable)
		},
		WrittenBy: "shale " + buildinfo.Read().Version, Logger: n.logger.With("component", "restore")})
	every := max(n.cfg.TieringInterval, 100*time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	warned := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if n.controllerID() != n.cfg.NodeID || !n.tiering.manager.InEffect() {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := pub.PublishOnce(pctx)
		cancel()
		if err != nil && time.Since(warned) > time.Minute {
			n.logger.Warn("publishing the bucket's topic descriptors failed", "err", err)
			warned = time.Now()
		}
	}
}

// maxRestoreRequestBytes bounds a RestoreRequest body.
const maxRestoreRequestBytes = 1 << 20

// serveRestore runs a restore from the node's bucket into its cluster.
func (n *Node) serveRestore(w http.ResponseWriter, r *http.Request) {
	var req adminapi.RestoreRequest
	rs := n.restorer(w, r, "restore", &req, func() string {
		if !req.All && len(req.Topics) == 0 {
			return "name topics or ask for all"
		}
		return ""
	})
	if rs == nil {
		return
	}
	rep, err := rs.Run(r.Context(), req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	writeAdminJSON(w, rep)
}

// restorer decodes the JSON body of a POST (at most
// maxRestoreRequestBytes) into req and returns a restore.Restorer from the
// node's bucket into its cluster, logging as what ("restore", "fork"). It
// answers and returns nil when the method is not POST (405), the body does
// not decode or refused says what is missing from it (400), or the node
// has no bucket (503).
func (n *Node) restorer(w http.ResponseWriter, r *http.Request, what string, req any, refused func() string) *restore.Restorer {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxRestoreRequestBytes)).Decode(req); err != nil {
		http.Error(w, "bad "+what+" request: "+err.Error(), http.StatusBadRequest)
		return nil
	}
	if msg := refused(); msg != "" {
		http.Error(w, msg, http.StatusBadRequest)
		return nil
	}
	if n.tiering == nil {
		http.Error(w, restore.ErrNoBucket.Error(), http.StatusServiceUnavailable)
		return nil
	}
	return restore.New(n.tiering.bucket, n.cfg.S3Prefix,
		restore.Target{Store: n.store, Meta: n.tiering.meta, ProducerIDs: n.pids}, n.logger.With("component", what))
}

// serveFork makes a point-in-time fork of a topic from the node's bucket
// metadata (restore.Restorer.Fork): 409 with the reason when refused.
func (n *Node) serveFork(w http.ResponseWriter, r *http.Request) {
	var req adminapi.ForkRequest
	rs := n.restorer(w, r, "fork", &req, func() string {
		if req.Source == "" || req.Name == "" {
			return "name the source topic and the new one"
		}
		return ""
	})
	if rs == nil {
		return
	}
	rep, err := rs.Fork(r.Context(), req)
	switch {
	case errors.Is(err, restore.ErrForkRefused) || errors.Is(err, controlplane.ErrTopicExists) || errors.Is(err, controlplane.ErrInvalidTopicName):
		http.Error(w, err.Error(), http.StatusConflict)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	writeAdminJSON(w, rep)
}
