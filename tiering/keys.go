package tiering

import (
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/shale-io/shale/controlplane"
)

// Kind names one object of a remote segment; it is the key's suffix.
type Kind string

// The objects of a remote segment.
const (
	KindLog       Kind = "log"
	KindIndex     Kind = "index"
	KindTimeIndex Kind = "timeindex"
	KindEpochs    Kind = "epochs"
	KindSnapshot  Kind = "snapshot"
	// KindTxnIndex is the segment's .txnindex (Kafka's format), uploaded
	// only when the segment holds an aborted transaction's marker.
	KindTxnIndex Kind = "txnindex"
	KindManifest Kind = "manifest.json"
)

// PartitionPrefix returns the key prefix, ending in "/", under which all of
// a partition's objects live:
//
//	<prefix>/<hash>/<topic>-<topicIdHex>/<partition>/
//
// <hash> is 8 hex digits of FNV-1a over "<topic>-<topicIdHex>/<partition>",
// spreading partitions over S3's per-prefix request limits while keeping
// each partition listable under one prefix. An empty prefix is left out.
func PartitionPrefix(prefix, topic string, id controlplane.TopicID, p int32) string {
	rest := fmt.Sprintf("%s-%s/%d", topic, id.Hex(), p)
	h := fnv.New32a()
	h.Write([]byte(rest))
	key := fmt.Sprintf("%08x/%s/", h.Sum32(), rest)
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		key = prefix + "/" + key
	}
	return key
}

// SegmentKey returns the key of one object of a remote segment:
// <partition prefix><base offset, 20 digits>-<leader epoch>-<segment id>.<kind>.
func SegmentKey(partitionPrefix string, base int64, epoch int32, segmentID string, kind Kind) string {
	return fmt.Sprintf("%s%020d-%d-%s.%s", partitionPrefix, base, epoch, segmentID, kind)
}

// ObjectKey returns the key of kind among a record's objects, or "" when the
// segment has none (a snapshot may be absent).
func ObjectKey(seg controlplane.RemoteSegment, kind Kind) string {
	suffix := "." + string(kind)
	for _, k := range seg.Objects {
		if strings.HasSuffix(k, suffix) {
			return k
		}
	}
	return ""
}
