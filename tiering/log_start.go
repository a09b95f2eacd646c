package tiering

import (
	"context"
	"fmt"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/partition"
)

// DeleteRecordsBefore moves the log start of a partition this node leads
// up to offset (Kafka's DeleteRecords) and returns the new log start (the
// low watermark). With remote storage on, the new start is first committed
// to the remote metadata, fenced by the leader epoch, so that cold reads,
// ListOffsets EARLIEST, remote retention, the followers and any later
// leader all start there; only then are the local segments below it
// deleted, so nothing below it goes unless the deletion is on record. A
// start inside the remote range needs no local deletion. offset must not
// pass the high watermark (segment.ErrOffsetOutOfRange).
func (m *Manager) DeleteRecordsBefore(ctx context.Context, rep *partition.Replica, offset int64) (int64, error) {
	if !rep.Config().Bool(config.RemoteStorageEnable) {
		return deleteLocal(rep, offset)
	}
	top, ok := m.cfg.Store.Topic(rep.Topic())
	if !ok {
		return deleteLocal(rep, offset)
	}
	if hw := rep.HighWatermark(); offset > hw || offset < 0 {
		return deleteLocal(rep, offset) // the replica's own range error
	}
	if err := m.meta.RaiseLogStart(ctx, top.ID, rep.Partition(), offset, rep.LeaderEpoch()); err != nil {
		return 0, fmt.Errorf("tiering: record the log start %d of %s-%d: %w", offset, rep.Topic(), rep.Partition(), err)
	}
	m.applyLogStart(rep, top.ID)
	return rep.LogStartOffset(), nil
}

func deleteLocal(rep *partition.Replica, offset int64) (int64, error) {
	if _, err := rep.DeleteRecordsBefore(offset); err != nil {
		return 0, err
	}
	return rep.LogStartOffset(), nil
}

// recordedStart is the log start DeleteRecords committed for the partition,
// or -1.
func (m *Manager) recordedStart(id controlplane.TopicID, p int32) int64 {
	if s, ok := m.meta.RemoteLogStart(id, p); ok {
		return s
	}
	return -1
}

// remoteStart is the first offset of the partition's remote data that is
// still retained: the start of the remote segments, or the recorded log
// start when that is higher; -1 when no remote segment holds an offset at
// or above it.
func remoteStart(remote []controlplane.RemoteSegment, recorded int64) int64 {
	start, ok := controlplane.RemoteLogStartOffset(remote)
	if !ok {
		return -1
	}
	if recorded > start {
		end, _ := controlplane.RemoteLogEndOffset(remote)
		if recorded > end {
			return -1
		}
		start = recorded
	}
	return start
}

// applyLogStart brings a replica to the partition's recorded log start:
// the local segments below it go (on a follower, or a leader elected
// before it saw the deletion), and the remote state it reports starts
// there.
func (m *Manager) applyLogStart(rep *partition.Replica, id controlplane.TopicID) {
	rec := m.recordedStart(id, rep.Partition())
	if rec < 0 {
		return
	}
	if local := rep.LocalLogStartOffset(); rec > local {
		if _, err := rep.DeleteRecordsBefore(min(rec, rep.HighWatermark())); err != nil {
			m.log.Warn("applying the recorded log start failed", "topic", rep.Topic(), "partition", rep.Partition(),
				"log_start", rec, "err", err)
		}
	}
	s, known := rep.RemoteState()
	if !known {
		s.CopiedNext = -1
	}
	s.LogStart = remoteStart(m.meta.ListRemoteSegments(id, rep.Partition()), rec)
	rep.SetRemoteState(s)
}
