package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
)

// Idempotence errors; the produce path maps them to Kafka error codes.
var (
	// ErrOutOfOrderSequence: the batch's first sequence does not follow the
	// producer's last one (OUT_OF_ORDER_SEQUENCE_NUMBER).
	ErrOutOfOrderSequence = errors.New("partition: out of order sequence number")
	// ErrProducerFenced: the batch's producer epoch is older than the one on
	// record (INVALID_PRODUCER_EPOCH).
	ErrProducerFenced = errors.New("partition: producer epoch is stale")
)

// maxCachedBatches is how many recent batches per producer are remembered to
// answer retried duplicates, as Kafka does (max.in.flight.requests = 5).
const maxCachedBatches = 5

// batchMeta is what the idempotence check remembers of one appended batch.
type batchMeta struct {
	FirstSeq, LastSeq       int32
	FirstOffset, LastOffset int64
	Timestamp               int64
}

// producerEntry is one producer id's state in one partition.
type producerEntry struct {
	Epoch   int16
	Batches []batchMeta // oldest first, at most maxCachedBatches
}

func (e *producerEntry) lastSeq() int32 {
	if len(e.Batches) == 0 {
		return -1
	}
	return e.Batches[len(e.Batches)-1].LastSeq
}

// ProducerState tracks idempotent producers of one partition: the epoch and
// the last five batches of each producer id. It is not safe for concurrent
// use; the Replica guards it with its append lock.
type ProducerState struct {
	producers map[int64]*producerEntry
}

// NewProducerState returns an empty state.
func NewProducerState() *ProducerState {
	return &ProducerState{producers: map[int64]*producerEntry{}}
}

// Len is the number of producers tracked.
func (ps *ProducerState) Len() int { return len(ps.producers) }

func inSequence(last, next int32) bool {
	return next == last+1 || (next == 0 && last == math.MaxInt32)
}

// Check decides whether a batch from an idempotent producer may be appended.
// It returns dup != nil when the batch repeats one of the producer's last five
// batches: the caller answers with the original offsets and writes nothing.
func (ps *ProducerState) Check(h *batch.Header) (dup *batchMeta, err error) {
	if h.ProducerID < 0 {
		return nil, nil
	}
	e, ok := ps.producers[h.ProducerID]
	if !ok {
		return nil, nil // a new producer (or one whose state retention removed) may start anywhere
	}
	if h.ProducerEpoch < e.Epoch {
		return nil, fmt.Errorf("%w: producer %d epoch %d < %d", ErrProducerFenced, h.ProducerID, h.ProducerEpoch, e.Epoch)
	}
	if h.ProducerEpoch == e.Epoch {
		last := h.LastSequence()
		for i := range e.Batches {
			if b := &e.Batches[i]; b.FirstSeq == h.BaseSequence && b.LastSeq == last {
				return b, nil
			}
		}
		if !inSequence(e.lastSeq(), h.BaseSequence) {
			return nil, fmt.Errorf("%w: producer %d epoch %d: expected %d, got %d", ErrOutOfOrderSequence,
				h.ProducerID, h.ProducerEpoch, e.lastSeq()+1, h.BaseSequence)
		}
		return nil, nil
	}
	// A bumped epoch starts again at sequence 0.
	if h.BaseSequence != 0 {
		return nil, fmt.Errorf("%w: producer %d new epoch %d must start at 0, got %d", ErrOutOfOrderSequence,
			h.ProducerID, h.ProducerEpoch, h.BaseSequence)
	}
	return nil, nil
}

// Update records an appended batch (with its assigned offsets in h).
func (ps *ProducerState) Update(h *batch.Header) {
	if h.ProducerID < 0 {
		return
	}
	e, ok := ps.producers[h.ProducerID]
	if !ok || h.ProducerEpoch != e.Epoch {
		e = &producerEntry{Epoch: h.ProducerEpoch}
		ps.producers[h.ProducerID] = e
	}
	if len(e.Batches) == maxCachedBatches {
		copy(e.Batches, e.Batches[1:])
		e.Batches = e.Batches[:maxCachedBatches-1]
	}
	e.Batches = append(e.Batches, batchMeta{
		FirstSeq: h.BaseSequence, LastSeq: h.LastSequence(),
		FirstOffset: h.BaseOffset, LastOffset: h.LastOffset(), Timestamp: h.MaxTimestamp,
	})
}

// TruncateTo forgets batches at or after offset (the log was truncated there).
func (ps *ProducerState) TruncateTo(offset int64) {
	for pid, e := range ps.producers {
		n := 0
		for _, b := range e.Batches {
			if b.LastOffset < offset {
				e.Batches[n] = b
				n++
			}
		}
		e.Batches = e.Batches[:n]
		if n == 0 {
			delete(ps.producers, pid)
		}
	}
}

// Snapshot files: `<20-digit offset>.snapshot` in the partition directory, the
// state as of that offset (every batch below it applied). Format, big endian:
// magic "SHPS", version u16, count u32, then per producer: id i64, epoch i16,
// n u8, n x (firstSeq i32, lastSeq i32, firstOffset i64, lastOffset i64,
// timestamp i64); then a CRC32C of everything before it.
const snapshotSuffix = ".snapshot"

var snapshotMagic = []byte("SHPS")

func snapshotName(dir string, offset int64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", offset, snapshotSuffix))
}

// Encode serialises the state deterministically (producers sorted by id).
func (ps *ProducerState) Encode() []byte {
	ids := make([]int64, 0, len(ps.producers))
	for id := range ps.producers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var buf bytes.Buffer
	be := binary.BigEndian
	buf.Write(snapshotMagic)
	binary.Write(&buf, be, uint16(1))
	binary.Write(&buf, be, uint32(len(ids)))
	for _, id := range ids {
		e := ps.producers[id]
		binary.Write(&buf, be, id)
		binary.Write(&buf, be, e.Epoch)
		buf.WriteByte(byte(len(e.Batches)))
		for _, b := range e.Batches {
			binary.Write(&buf, be, b)
		}
	}
	sum := crc32.Checksum(buf.Bytes(), crc32.MakeTable(crc32.Castagnoli))
	binary.Write(&buf, be, sum)
	return buf.Bytes()
}

// ErrBadSnapshot: a producer-state snapshot failed its checks.
var ErrBadSnapshot = errors.New("partition: bad producer state snapshot")

// DecodeProducerState parses Encode's output.
func DecodeProducerState(b []byte) (*ProducerState, error) {
	if len(b) < 14 || !bytes.Equal(b[:4], snapshotMagic) {
		return nil, fmt.Errorf("%w: header", ErrBadSnapshot)
	}
	be := binary.BigEndian
	body, sum := b[:len(b)-4], be.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)) != sum {
		return nil, fmt.Errorf("%w: crc", ErrBadSnapshot)
	}
	if v := be.Uint16(body[4:]); v != 1 {
		return nil, fmt.Errorf("%w: version %d", ErrBadSnapshot, v)
	}
	n := be.Uint32(body[6:])
	r := bytes.NewReader(body[10:])
	ps := NewProducerState()
	for i := uint32(0); i < n; i++ {
		var id int64
		var e producerEntry
		var cnt uint8
		if binary.Read(r, be, &id) != nil || binary.Read(r, be, &e.Epoch) != nil || binary.Read(r, be, &cnt) != nil || cnt > maxCachedBatches {
			return nil, fmt.Errorf("%w: producer %d", ErrBadSnapshot, i)
		}
		e.Batches = make([]batchMeta, cnt)
		for j := range e.Batches {
			if binary.Read(r, be, &e.Batches[j]) != nil {
				return nil, fmt.Errorf("%w: producer %d batch %d", ErrBadSnapshot, i, j)
			}
		}
		ps.producers[id] = &e
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrBadSnapshot, r.Len())
	}
	return ps, nil
}

// WriteSnapshot writes the state as of offset atomically (temp, fsync, rename)
// and, when keep > 0, keeps only the newest `keep` snapshots.
func (ps *ProducerState) WriteSnapshot(dir string, offset int64, keep int) error {
	return ps.writeSnapshot(dir, offset, keep, segment.WriteFileAtomic)
}

// writeSnapshotNoSync is WriteSnapshot without fsyncs (segment.WriteFileNoSync):
// after a crash the file may be missing or torn, which its checksum tells;
// loaders then fall back to an older snapshot and replay the log.
func (ps *ProducerState) writeSnapshotNoSync(dir string, offset int64, keep int) error {
	return ps.writeSnapshot(dir, offset, keep, segment.WriteFileNoSync)
}

func (ps *ProducerState) writeSnapshot(dir string, offset int64, keep int, write func(dir, name string, data []byte) error) error {
	if err := write(dir, filepath.Base(snapshotName(dir, offset)), ps.Encode()); err != nil {
		return err
	}
	offs := listSnapshots(dir)
	for keep > 0 && len(offs) > keep {
		os.Remove(snapshotName(dir, offs[0]))
		offs = offs[1:]
	}
	return nil
}

// PruneSnapshots removes the snapshots below offset (the log start: the
// segments they were taken for are gone), except the newest of them, from
// which recovery could still replay.
func PruneSnapshots(dir string, offset int64) {
	offs := listSnapshots(dir)
	for i := 0; i+1 < len(offs) && offs[i+1] <= offset; i++ {
		os.Remove(snapshotName(dir, offs[i]))
	}
}

// listSnapshots returns the offsets of the snapshot files in dir, ascending.
func listSnapshots(dir string) []int64 {
	ents, _ := os.ReadDir(dir)
	var offs []int64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, snapshotSuffix) {
			continue
		}
		if off, err := strconv.ParseInt(strings.TrimSuffix(name, snapshotSuffix), 10, 64); err == nil {
			offs = append(offs, off)
		}
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	return offs
}

// LoadLatestSnapshot loads the newest valid snapshot at or below maxOffset,
// removing snapshots above maxOffset (the log no longer reaches them) and
// unreadable ones. It returns an empty state at offset 0 when there is none.
func LoadLatestSnapshot(dir string, maxOffset int64) (*ProducerState, int64) {
	offs := listSnapshots(dir)
	for i := len(offs) - 1; i >= 0; i-- {
		if offs[i] > maxOffset {
			os.Remove(snapshotName(dir, offs[i]))
			continue
		}
		b, err := os.ReadFile(snapshotName(dir, offs[i]))
		if err == nil {
			if ps, err := DecodeProducerState(b); err == nil {
				return ps, offs[i]
			}
		}
		os.Remove(snapshotName(dir, offs[i]))
	}
	return NewProducerState(), 0
}
