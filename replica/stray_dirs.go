package replica

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/segment/vfs"
)

// sweepStray removes partition directories that belong to no assignment of
// this node: a topic deleted, re-created or moved away while the node was
// down leaves its directory behind, since the control plane's events for it
// came while nobody here listened. Kafka calls these stray logs.
//
// Only directories this node made are touched (those with a
// partition.metadata naming a topic id), only once the control plane's cache
// is loaded (Store.Open waits for it), and never one an open replica uses.
// It is called at the first Reconcile, under reconcileMu.
func (r *Manager) sweepStray(topics map[string]controlplane.Topic, want map[replicaKey]controlplane.PartitionState) error {
	// High watermark entries of partitions no longer assigned here go
	// too, directory or not.
	r.hwCkpts.ForgetUnless(func(topic string, p int32) bool {
		_, assigned := want[replicaKey{topic, p}]
		return assigned
	})
	entries, err := r.fs.ReadDir(r.logsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		k, ok := parsePartitionDir(e.Name())
		if !ok {
			continue
		}
		dir := filepath.Join(r.logsDir, e.Name())
		id, ok := readTopicID(r.fs, dir)
		if !ok {
			continue // not made by this node's replicas: leave it
		}
		r.mu.RLock()
		_, open := r.mu.replicas[k]
		r.mu.RUnlock()
		if open {
			continue
		}
		t, exists := topics[k.topic]
		_, assigned := want[k]
		var why string
		switch {
		case !exists:
			why = "topic deleted"
		case t.ID.String() != id:
			why = "topic re-created under the same name"
		case !assigned:
			why = "partition no longer assigned to this node"
		default:
			continue
		}
		r.logger.Info("removing a stray partition directory", "dir", dir, "topic_id", id, "reason", why)
		r.hwCkpts.Forget(k.topic, k.partition)
		if err := vfs.RemoveAll(r.fs, dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// parsePartitionDir splits a "<topic>-<partition>" directory name.
func parsePartitionDir(name string) (replicaKey, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return replicaKey{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != name[i+1:] {
		return replicaKey{}, false
	}
	return replicaKey{topic: name[:i], partition: int32(p)}, true
}
