// Package chaos is Shale's fault-injection suite: it starts its own cluster
// (NATS, the S3 test server, Shale nodes as processes), runs Kafka
// workloads against it, injects faults on a seeded schedule, heals, reads
// everything back and checks the history for the violations a Kafka
// operator cares about (see Check and docs/reliability.md). It is run by
// cmd/shale-chaos and by its own short test in make test; it does not
// import package testing outside its tests.
package chaos

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TP names one partition.
type TP struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func (tp TP) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// Ack is one record a producer had acknowledged (acks=all, or acks=1 on
// the History's LeaderAcks topics): where the broker said it is.
type Ack struct {
	TP
	Producer string        `json:"producer"`
	Seq      int64         `json:"seq"`
	Key      string        `json:"key,omitempty"`
	Value    string        `json:"value"`
	Offset   int64         `json:"offset"`
	At       time.Duration `json:"at"`      // since the run began
	Latency  time.Duration `json:"latency"` // produce call to acknowledgement
}

// Rec is one record read back: at an offset, a value.
type Rec struct {
	Offset int64  `json:"offset"`
	Key    string `json:"key,omitempty"`
	Value  string `json:"value"`
	// TS is the record's timestamp (ms), set by the final reads.
	TS int64 `json:"ts,omitempty"`
}

// Read is a record a consumer saw during the run.
type Read struct {
	TP
	Rec
	Consumer string        `json:"consumer"`
	At       time.Duration `json:"at"`
}

// FinalRead is one partition read after the heal, from its log start (the
// cold tier included) to its high watermark.
type FinalRead struct {
	TP
	LogStart int64 `json:"log_start"`
	HW       int64 `json:"hw"`
	Records  []Rec `json:"records"`
	// Err is set when the read could not reach the high watermark.
	Err string `json:"err,omitempty"`
}

// Commit is one observation of a group's committed offset for a partition:
// a commit the coordinator acknowledged (Source "commit"), an OffsetFetch
// answer (Source "fetch", -1 for none), sent at Sent and answered at At, or
// the first offset a new group member read (Source "resume", Sent when the
// member was made).
type Commit struct {
	Group string `json:"group"`
	TP
	Offset int64         `json:"offset"`
	Source string        `json:"source"`
	Sent   time.Duration `json:"sent"`
	At     time.Duration `json:"at"`
}

// Trim is one partition of a DeleteRecords the workload sent. Acknowledged,
// the partition's records below LowWatermark are deleted and no reader may
// see them again; unacknowledged (an error, a timeout) it may still have
// taken effect, so records below Offset may be gone on purpose either way.
type Trim struct {
	TP
	Offset       int64         `json:"offset"`        // asked
	Acked        bool          `json:"acked"`         // answered without an error
	LowWatermark int64         `json:"low_watermark"` // answered; -1 unless Acked
	Sent         time.Duration `json:"sent"`
	At           time.Duration `json:"at"`
}

// Actor is one producer or consumer's progress around the heal: whether it
// made progress again within the bound after the heal ended.
type Actor struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // producer, consumer, group
	// ResumedAt is when it first made progress after the heal ended (0:
	// never).
	ResumedAt time.Duration `json:"resumed_at"`
}

// BatchSig is one record batch of a replica's local log: its offsets and a
// hash of its bytes.
type BatchSig struct {
	Base int64  `json:"base"`
	Last int64  `json:"last"`
	Hash uint32 `json:"hash"`
}

// ReplicaLog is one node's local log of one partition, below Bound (the
// partition's high watermark when it was read).
type ReplicaLog struct {
	TP
	Node    int32      `json:"node"`
	Bound   int64      `json:"bound"`
	Batches []BatchSig `json:"batches"`
}

// BucketObject is one object found in the bucket.
type BucketObject struct {
	Key string        `json:"key"`
	Age time.Duration `json:"age"` // when the bucket was listed
}

// History is everything a run recorded, the input of Check. Durations are
// since the run began.
type History struct {
	// Compacted are the topics with cleanup.policy=compact: offsets may be
	// missing from their final read, and only each key's latest value must
	// survive.
	Compacted []string `json:"compacted"`
	// LeaderAcks are the topics written with acks=1: an acknowledged record
	// may be lost and a retried one written twice; only what consumers saw
	// (and the replicas' agreement) is judged.
	LeaderAcks []string    `json:"leader_acks,omitempty"`
	Acks       []Ack       `json:"acks"`
	Reads      []Read      `json:"reads"`
	Final      []FinalRead `json:"final"`
	Commit     []Commit    `json:"commits"`
	Trims      []Trim      `json:"trims,omitempty"`

	HealEnd time.Duration `json:"heal_end"`
	// HealErr is set when the heal did not finish within its bound.
	HealErr string `json:"heal_err,omitempty"`
	// ResumeBound is how long after the heal each actor has to resume.
	ResumeBound time.Duration `json:"resume_bound"`
	Actors      []Actor       `json:"actors"`

	Replicas []ReplicaLog `json:"replicas"`

	// Bucket and Referenced are the bucket's objects and the keys committed
	// remote metadata references, listed after the heal; OrphanGrace is the
	// reconciler's grace. Bucket nil skips the orphan check.
	Bucket      []BucketObject `json:"bucket,omitempty"`
	Referenced  []string       `json:"referenced,omitempty"`
	OrphanGrace time.Duration  `json:"orphan_grace"`

	// ETL is the transactional workload's record (nil: it did not run).
	ETL *ETLHistory `json:"etl,omitempty"`
	// Share is the share group workload's record (nil: it did not run).
	Share *ShareHistory `json:"share,omitempty"`
	// TierOps is the bucket ops' record (nil: none ran).
	TierOps *TierOpsHistory `json:"tier_ops,omitempty"`
}

// Value is the value a producer writes for seq: "producer:seq:" and a
// filler, so that records differ and segments fill up.
func Value(producer string, seq int64, fill int) string {
	v := producer + ":" + strconv.FormatInt(seq, 10) + ":"
	if fill > 0 {
		v += strings.Repeat("x", fill)
	}
	return v
}

// ParseValue splits a Value back into its producer and sequence; ok is
// false for a value no producer of the suite wrote.
func ParseValue(v string) (producer string, seq int64, ok bool) {
	a, rest, ok1 := strings.Cut(v, ":")
	b, _, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(b, 10, 64)
	if err != nil {
		return "", 0, false
	}
	return a, n, true
}
