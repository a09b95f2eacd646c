package tiering

import (
	"context"
	"regexp"
	"strings"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/objstore"
)

// segmentObjectKey matches the part of a key after the prefix that
// SegmentKey writes: <hash>/<topic>-<topic id hex>/<partition>/<base>-<epoch>-<segment id>.<kind>.
var segmentObjectKey = regexp.MustCompile(`^[0-9a-f]{8}/[^/]+-[0-9a-f]{32}/[0-9]+/[0-9]{20}-[0-9]+-[0-9a-f]+\.(log|index|timeindex|epochs|snapshot|manifest\.json)$`)

// IsSegmentObjectKey reports whether key is a segment object under prefix,
// as SegmentKey names them.
func IsSegmentObjectKey(prefix, key string) bool {
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		var ok bool
		if key, ok = strings.CutPrefix(key, prefix+"/"); !ok {
			return false
		}
	}
	return segmentObjectKey.MatchString(key)
}

// abortCutUploads aborts the incomplete multipart uploads that crashed
// uploaders left behind (their parts cost storage and no listing shows
// them), on providers that keep them (S3). An upload is aborted when it is
// older than the orphan grace, its key is one of Shale's segment objects
// under the prefix, and no record still names it: a live upload's
// CopyStarted record does, and other applications' keys in the same bucket
// are never touched. The controller does it, on reconcile passes.
func (m *Manager) abortCutUploads(ctx context.Context) {
	referenced := map[string]bool{}
	for _, id := range m.meta.RemoteTopicIDs() {
		for _, p := range m.meta.RemotePartitions(id) {
			for _, rec := range m.meta.ListRemoteSegments(id, p) {
				if rec.State == controlplane.CopyStarted || rec.State == controlplane.CopyFinished {
					for _, k := range rec.Objects {
						referenced[k] = true
					}
				}
			}
		}
	}
	keep := func(key string) bool { return referenced[key] || !IsSegmentObjectKey(m.cfg.Prefix, key) }
	n, supported, err := objstore.AbortIncompleteUploads(ctx, m.bucket, m.cfg.OrphanGrace, keep)
	if !supported {
		return
	}
	if n > 0 {
		m.log.Info("reconciler: aborted incomplete multipart uploads", "count", n)
		m.stats.orphansDeleted.Add(uint64(n))
	}
	if err != nil {
		m.log.Warn("reconciler: aborting incomplete multipart uploads failed", "err", err)
	}
}
