package admin

// AlterReplicaLogDirs (key 34), versions 0-2.
//
//   - v1: as v0.  v2: flexible versions.
//
// Kafka moves a replica between the log dirs of one broker. A Shale node
// has one log dir (<data_dir>/logs, as DescribeLogDirs names it), so this
// answers as Kafka's ReplicaManager.alterReplicaLogDirs does on a broker
// with a single log dir, and moves nothing:
//
//   - a dir other than the node's log dir (its absolute path) is
//     LOG_DIR_NOT_FOUND for each of its partitions, as Kafka's
//     isLogDirOnline throws for a dir not in log.dirs;
//   - a partition this node holds no replica of is REPLICA_NOT_AVAILABLE
//     (Kafka's answer for NOT_LEADER_OR_FOLLOWER, kept for compatibility);
//   - a partition this node holds, asked into the log dir it is in
//     already, is NONE: there is nothing to move.
//
// A partition named twice is answered once, for the last dir naming it
// (Kafka reads the request into a map). Results are grouped by topic.
//
// It needs Alter on the cluster, as in Kafka: without it every partition
// is CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (h *Handlers) handleAlterReplicaLogDirs(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.AlterReplicaLogDirsRequest)
	resp := r.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	type tp struct {
		topic string
		p     int32
	}
	var order []tp
	dirOf := map[tp]string{}
	for _, d := range r.Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				k := tp{t.Topic, p}
				if _, ok := dirOf[k]; !ok {
					order = append(order, k)
				}
				dirOf[k] = d.Dir
			}
		}
	}
	allowed := h.authz.Authorize(req, acl.OpAlter, acl.Cluster)
	logDir := h.logDir()
	held := map[tp]bool{}
	for _, rep := range h.replicas.All() {
		held[tp{rep.Topic(), rep.Partition()}] = true
	}
	topicAt := map[string]int{}
	for _, k := range order {
		var code int16
		switch {
		case !allowed:
			code = kerr.ClusterAuthorizationFailed.Code
		case dirOf[k] != logDir:
			code = kerr.LogDirNotFound.Code
		case !held[k]:
			code = kerr.ReplicaNotAvailable.Code
		}
		i, ok := topicAt[k.topic]
		if !ok {
			i = len(resp.Topics)
			topicAt[k.topic] = i
			t := kmsg.NewAlterReplicaLogDirsResponseTopic()
			t.Topic = k.topic
			resp.Topics = append(resp.Topics, t)
		}
		p := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
		p.Partition, p.ErrorCode = k.p, code
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
	return kafka.Reply{Response: resp}, nil
}
