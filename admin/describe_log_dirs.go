package admin

// DescribeLogDirs (key 35), versions 0-5.
//
//   - v0, v1: one result per log dir of this node: its partitions, each with
//     its size on local disk, offset lag and IsFuture. (Kafka 4.0 dropped
//     v0, KIP-896; it costs nothing, and Kafka 3.x tools still send it.)
//   - v2: flexible versions.
//   - v3: ErrorCode at the top of the response (CLUSTER_AUTHORIZATION_FAILED).
//   - v4: TotalBytes and UsableBytes of the log dir's filesystem (KIP-827).
//   - v5: IsCordoned (KIP-1066), always false: Shale has one log dir and
//     no cordoning.
//
// A node has one log dir, <data_dir>/logs, answered by its absolute path.
// Null Topics describes every partition this node holds; otherwise only the
// named ones this node holds (others are left out, as Kafka leaves them
// out), and a topic left with no partition is left out. For each partition:
//
//   - PartitionSize: the bytes of its local segments' .log files, as
//     Kafka's log.size; remote (tiered) segments are not counted.
//   - OffsetLag: Kafka's max(HW - LEO, 0) for the current log. It is 0
//     on a leader, and on a follower too, whose high watermark is
//     min(the leader's, its own LEO), as in Kafka: a follower does not
//     learn the leader's LEO, so a lagging follower is not shown here.
//   - IsFuture: false (AlterReplicaLogDirs moves nothing: one log dir).
//
// TotalBytes and UsableBytes are statfs(2)'s blocks and blocks available to
// an unprivileged user, times the fragment size, as Java's FileStore
// getTotalSpace and getUsableSpace. A failed statfs answers the dir
// KAFKA_STORAGE_ERROR with a log line.
//
// It needs Describe on the cluster, as in Kafka: without it the answer has
// no results and (v3+) CLUSTER_AUTHORIZATION_FAILED.

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/replica"
)

func (h *Handlers) handleDescribeLogDirs(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.DescribeLogDirsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !h.authz.Authorize(req, acl.OpDescribe, acl.Cluster) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return kafka.Reply{Response: resp}, nil
	}
	var want map[string]map[int32]bool // nil: every partition
	if r.Topics != nil {
		want = make(map[string]map[int32]bool, len(r.Topics))
		for _, t := range r.Topics {
			if want[t.Topic] == nil {
				want[t.Topic] = make(map[int32]bool, len(t.Partitions))
			}
			for _, p := range t.Partitions {
				want[t.Topic][p] = true
			}
		}
	}
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = h.logDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir.Dir, &st); err != nil {
		h.logger.Warn("describe log dirs: statfs failed", "dir", dir.Dir, "err", err)
		dir.ErrorCode = kerr.KafkaStorageError.Code
		resp.Dirs = append(resp.Dirs, dir)
		return kafka.Reply{Response: resp}, nil
	}
	frag := int64(st.Frsize)
	if frag <= 0 {
		frag = int64(st.Bsize)
	}
	dir.TotalBytes, dir.UsableBytes = int64(st.Blocks)*frag, int64(st.Bavail)*frag
	dir.Topics = describeLocalPartitions(h.replicas.All(), want)
	resp.Dirs = append(resp.Dirs, dir)
	return kafka.Reply{Response: resp}, nil
}

// logDir is the node's one log dir, absolute as Kafka answers it.
func (h *Handlers) logDir() string {
	d := replica.ConfigFrom(h.cfg).LogsDir
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return d
}

// describeLocalPartitions groups reps by topic, keeping those want names
// (nil: all), in topic and partition order.
func describeLocalPartitions(reps []*partition.Replica, want map[string]map[int32]bool) []kmsg.DescribeLogDirsResponseDirTopic {
	byTopic := map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
	for _, rep := range reps {
		if want != nil && !want[rep.Topic()][rep.Partition()] {
			continue
		}
		l := rep.Log()
		p := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		p.Partition, p.Size = rep.Partition(), l.Size()
		p.OffsetLag = max(rep.HighWatermark()-l.LogEndOffset(), 0)
		byTopic[rep.Topic()] = append(byTopic[rep.Topic()], p)
	}
	out := make([]kmsg.DescribeLogDirsResponseDirTopic, 0, len(byTopic))
	for name, ps := range byTopic {
		slices.SortFunc(ps, func(a, b kmsg.DescribeLogDirsResponseDirTopicPartition) int {
			return cmp.Compare(a.Partition, b.Partition)
		})
		t := kmsg.NewDescribeLogDirsResponseDirTopic()
		t.Topic, t.Partitions = name, ps
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b kmsg.DescribeLogDirsResponseDirTopic) int { return cmp.Compare(a.Topic, b.Topic) })
	return out
}
