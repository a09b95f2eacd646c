package controlplane

import (
	"encoding/json"
	"fmt"
)

// The KV values are JSON, with ids as hex strings, so an operator can read
// them with `nats kv get`. Field names are part of the stored format.

type topicRecord struct {
	Name              string            `json:"name"`
	ID                string            `json:"id"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs,omitempty"`
	Internal          bool              `json:"internal,omitempty"`
}

type partitionRecord struct {
	TopicID        string  `json:"topic_id"`
	Topic          string  `json:"topic"`
	Partition      int32   `json:"partition"`
	Replicas       []int32 `json:"replicas"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	ISR            []int32 `json:"isr"`
	PartitionEpoch int32   `json:"partition_epoch"`
	ELR            []int32 `json:"eligible_leader_replicas,omitempty"`
	CtrlEpoch      uint64  `json:"controller_epoch,omitempty"`
	Adding         []int32 `json:"adding_replicas,omitempty"`
	Removing       []int32 `json:"removing_replicas,omitempty"`
	LeaderInc      string  `json:"leader_incarnation,omitempty"`
}

type brokerRecord struct {
	NodeID    int32  `json:"node_id"`
	Host      string `json:"host"`
	Port      int32  `json:"port"`
	Rack      string `json:"rack,omitempty"`
	Listeners string `json:"listeners,omitempty"` // Broker.Listeners
	// Incarnation is random per Store, so a second process claiming the same
	// node id is told apart from a re-registration.
	Incarnation  string             `json:"incarnation"`
	UncleanStart bool               `json:"unclean_start,omitempty"`
	Shutdown     bool               `json:"controlled_shutdown,omitempty"`
	LogsReported bool               `json:"logs_reported,omitempty"`
	Logs         []replicaLogRecord `json:"replica_logs,omitempty"`
	// Offline lists the replicas the node cannot serve (Kafka's offline
	// log dirs): "<topic id>-<partition>".
	Offline []offlineRecord `json:"offline_replicas,omitempty"`
}

type offlineRecord struct {
	TopicID   string `json:"topic_id"`
	Partition int32  `json:"partition"`
}

type replicaLogRecord struct {
	TopicID        string `json:"topic_id"`
	Partition      int32  `json:"partition"`
	LeaderEpoch    int32  `json:"leader_epoch"`
	PartitionEpoch int32  `json:"partition_epoch"`
	LastEpoch      int32  `json:"last_epoch"`
	LogEnd         int64  `json:"log_end"`
	InISR          bool   `json:"in_isr,omitempty"`
	NewDisk        bool   `json:"new_disk,omitempty"`
}

func encodeTopic(t Topic) []byte {
	return mustJSON(topicRecord{Name: t.Name, ID: t.ID.Hex(), Partitions: t.Partitions,
		ReplicationFactor: t.ReplicationFactor, Configs: t.Configs, Internal: t.Internal})
}

func decodeTopic(b []byte) (Topic, error) {
	var r topicRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return Topic{}, fmt.Errorf("controlplane: decode topic: %w", err)
	}
	id, err := ParseTopicID(r.ID)
	if err != nil {
		return Topic{}, err
	}
	// A record written before a topic was counted internal
	// (__share_group_state before issue 25) is internal by its name.
	return Topic{Name: r.Name, ID: id, Partitions: r.Partitions, ReplicationFactor: r.ReplicationFactor,
		Configs: r.Configs, Internal: r.Internal || isInternalTopic(r.Name)}, nil
}

func encodePartition(p PartitionState) []byte {
	return mustJSON(partitionRecord{TopicID: p.TopicID.Hex(), Topic: p.Topic, Partition: p.Partition,
		Replicas: p.Replicas, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, ISR: p.ISR, PartitionEpoch: p.PartitionEpoch, ELR: p.ELR, CtrlEpoch: p.ControllerEpoch,
		Adding: p.AddingReplicas, Removing: p.RemovingReplicas, LeaderInc: p.LeaderIncarnation})
}

func decodePartition(b []byte, rev uint64) (PartitionState, error) {
	var r partitionRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return PartitionState{}, fmt.Errorf("controlplane: decode partition: %w", err)
	}
	id, err := ParseTopicID(r.TopicID)
	if err != nil {
		return PartitionState{}, err
	}
	return PartitionState{TopicID: id, Topic: r.Topic, Partition: r.Partition, Replicas: r.Replicas,
		Leader: r.Leader, LeaderEpoch: r.LeaderEpoch, ISR: r.ISR, PartitionEpoch: r.PartitionEpoch, ELR: r.ELR, ControllerEpoch: r.CtrlEpoch,
		AddingReplicas: r.Adding, RemovingReplicas: r.Removing, LeaderIncarnation: r.LeaderInc, Revision: rev}, nil
}

func encodeBroker(b Broker, incarnation string, logs *[]ReplicaLog, offline []OfflineReplica) []byte {
	r := brokerRecord{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack, Incarnation: incarnation,
		UncleanStart: b.UncleanStart, Shutdown: b.ControlledShutdown, LogsReported: logs != nil, Listeners: b.Listeners}
	for _, o := range offline {
		r.Offline = append(r.Offline, offlineRecord{TopicID: o.TopicID.Hex(), Partition: o.Partition})
	}
	if logs != nil {
		for _, l := range *logs {
			r.Logs = append(r.Logs, replicaLogRecord{TopicID: l.TopicID.Hex(), Partition: l.Partition,
				LeaderEpoch: l.LeaderEpoch, PartitionEpoch: l.PartitionEpoch, LastEpoch: l.LastEpoch, LogEnd: l.LogEnd, InISR: l.InISR, NewDisk: l.NewDisk})
		}
	}
	return mustJSON(r)
}

// replicaLogs decodes the record's reports, skipping any it cannot read.
func (r brokerRecord) replicaLogs() []ReplicaLog {
	var out []ReplicaLog
	for _, l := range r.Logs {
		id, err := ParseTopicID(l.TopicID)
		if err != nil {
			continue
		}
		out = append(out, ReplicaLog{TopicID: id, Partition: l.Partition, LeaderEpoch: l.LeaderEpoch,
			PartitionEpoch: l.PartitionEpoch, LastEpoch: l.LastEpoch, LogEnd: l.LogEnd, InISR: l.InISR, NewDisk: l.NewDisk})
	}
	return out
}

// offlineReplicas decodes the record's offline replicas, skipping any it
// cannot read.
func (r brokerRecord) offlineReplicas() []OfflineReplica {
	var out []OfflineReplica
	for _, o := range r.Offline {
		if id, err := ParseTopicID(o.TopicID); err == nil {
			out = append(out, OfflineReplica{TopicID: id, Partition: o.Partition})
		}
	}
	return out
}

func decodeBroker(b []byte) (brokerRecord, error) {
	var r brokerRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("controlplane: decode broker: %w", err)
	}
	return r, nil
}

// mustJSON marshals values whose types cannot fail to marshal.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("controlplane: marshal %T: %v", v, err))
	}
	return b
}
