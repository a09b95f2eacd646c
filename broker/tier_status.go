package broker

// The admin endpoint behind `shale tier status`, and the constructor of the
// node's cold reader (tiering/coldread) for the fetch path.

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/fetch"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/tiering/coldread"
)

// TierStatusPath is the admin HTTP path of the tier status
// (adminapi.TierStatusPath).
const TierStatusPath = adminapi.TierStatusPath

// TierStatus and TierPartitionStatus are the body of GET /v1/tier/status
// and its lines: adminapi's types, named here too for the node's metrics
// and the tiering tests.
type (
	TierStatus          = adminapi.TierStatus
	TierPartitionStatus = adminapi.TierPartitionStatus
)

// tierStatusHandler serves TierStatusPath from this node's replicas and the
// remote segment metadata (the lead mounts it on the admin mux).
func (n *Node) tierStatusHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		var remote func(topic string, p int32) []controlplane.RemoteSegment
		if rl := n.RemoteLog(); rl != nil {
			remote = func(topic string, p int32) []controlplane.RemoteSegment {
				t, ok := n.store.TopicShared(topic) // read only: each partition of a scrape
				if !ok {
					return nil
				}
				return rl.ListRemoteSegments(t.ID, p)
			}
		}
		st := tierStatusOf(n.cfg.NodeID, n.replicas.All(), remote, r.URL.Query().Get("topic"))
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(st)
	})
}

// tierStatusOf computes the status of reps (those of topic only, unless
// topic is ""), sorted by topic and partition. remote lists a partition's
// remote segment records; nil means no tiering.
func tierStatusOf(node int32, reps []*partition.Replica, remote func(string, int32) []controlplane.RemoteSegment, topic string) TierStatus {
	st := TierStatus{NodeID: node, Partitions: []TierPartitionStatus{}}
	for _, rep := range reps {
		if topic != "" && rep.Topic() != topic {
			continue
		}
		l := rep.Log()
		ps := TierPartitionStatus{Topic: rep.Topic(), Partition: rep.Partition(), LocalLogStartOffset: l.LogStartOffset(),
			HighWatermark: rep.HighWatermark(), LastTieredOffset: -1}
		ps.LogStartOffset = ps.LocalLogStartOffset
		if remote != nil {
			segs := remote(rep.Topic(), rep.Partition())
			if start, ok := controlplane.RemoteLogStartOffset(segs); ok && start < ps.LogStartOffset {
				ps.LogStartOffset = start
			}
			if end, ok := controlplane.RemoteLogEndOffset(segs); ok {
				ps.LastTieredOffset = end
			}
			for _, s := range segs {
				if s.State == controlplane.CopyFinished {
					ps.RemoteSegments++
					ps.RemoteBytes += s.Size
				}
			}
		}
		for _, s := range l.Segments() {
			if !s.Active && s.NextOffset > ps.LastTieredOffset+1 && s.Size > 0 {
				ps.UploadLagSegments++
				ps.UploadLagBytes += s.Size
			}
		}
		ps.UploadLagOffsets = max(ps.HighWatermark-(ps.LastTieredOffset+1), 0)
		st.Partitions = append(st.Partitions, ps)
	}
	slices.SortFunc(st.Partitions, func(a, b TierPartitionStatus) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return st
}

// newColdReader returns the reader of remote segments for the fetch path,
// or nil when the node has no cold tier. The caller closes it (before
// stopping tiering, which closes the bucket).
func (n *Node) newColdReader() (*coldread.Reader, error) {
	if n.RemoteLog() == nil || n.Bucket() == nil {
		return nil, nil
	}
	return coldread.New(coldread.Defaults(), n.Bucket(), n.RemoteLog(), n.store, n.logger)
}

// fetchOptions are the fetch and list-offsets options for cold reads
// through r; none when r is nil (no tiering).
func fetchOptions(r *coldread.Reader) []fetch.Option {
	if r == nil {
		return nil
	}
	return []fetch.Option{fetch.WithRemote(r)}
}

// BucketMetrics returns the totals of the node's bucket calls by operation
// (objstore.OpPut, OpGet, ...), each call counted once however many
// attempts its retries made; nil before Start. Safe for concurrent use.
func (n *Node) BucketMetrics() *objstore.Counters { return n.bucketMetrics }
