package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/segment/vfs"
)

// Idempotence errors; the produce path maps them to Kafka error codes.
var (
	// ErrOutOfOrderSequence: the batch's first sequence does not follow the
	// producer's last one (OUT_OF_ORDER_SEQUENCE_NUMBER).
	ErrOutOfOrderSequence = errors.New("partition: out of order sequence number")
	// ErrProducerFenced: the batch's (or transaction marker's) producer
	// epoch is older than the one on record (INVALID_PRODUCER_EPOCH; Kafka
	// answers PRODUCER_FENCED to a transactional producer's newer API
	// versions, which the handler decides).
	ErrProducerFenced = errors.New("partition: producer epoch is stale")
	// ErrInvalidTxnState: a non-transactional batch from a producer whose
	// transaction is open in this partition (INVALID_TXN_STATE).
	ErrInvalidTxnState = errors.New("partition: non-transactional batch inside an open transaction")
	// ErrCoordinatorFenced: a transaction marker from a coordinator epoch
	// older than the one that last wrote a marker for the producer
	// (TRANSACTION_COORDINATOR_FENCED).
	ErrCoordinatorFenced = errors.New("partition: transaction coordinator epoch is stale")
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
	// CoordinatorEpoch is that of the last transaction marker written
	// for the producer, -1 before any.
	CoordinatorEpoch int32
	// TxnFirstOffset is the first offset of the producer's open
	// transaction (its first transactional batch since the last marker),
	// -1 when none is open.
	TxnFirstOffset int64
	// LastTimestamp is the max timestamp of the producer's last batch or
	// marker.
	LastTimestamp int64
}

func newEntry(epoch int16) *producerEntry {
	return &producerEntry{Epoch: epoch, CoordinatorEpoch: -1, TxnFirstOffset: -1, LastTimestamp: -1}
}

func (e *producerEntry) lastSeq() int32 {
	if len(e.Batches) == 0 {
		return -1
	}
	return e.Batches[len(e.Batches)-1].LastSeq
}

// ProducerState tracks idempotent and transactional producers of one
// partition: the epoch and the last five batches of each producer id, and
// each producer's open transaction. It is not safe for concurrent use; the
// Replica guards it with its append lock.
type ProducerState struct {
	producers map[int64]*producerEntry
	// open maps the producers with an open transaction to its first
	// offset (the entries' TxnFirstOffset, indexed for the last stable
	// offset).
	open map[int64]int64
}

// NewProducerState returns an empty state.
func NewProducerState() *ProducerState {
	return &ProducerState{producers: map[int64]*producerEntry{}, open: map[int64]int64{}}
}

// FirstOpenOffset is the first offset of the earliest open transaction, or
// -1 when none is open.
func (ps *ProducerState) FirstOpenOffset() int64 {
	first := int64(-1)
	for _, off := range ps.open {
		if first < 0 || off < first {
			first = off
		}
	}
	return first
}

// OpenTxns is the number of open transactions.
func (ps *ProducerState) OpenTxns() int { return len(ps.open) }

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
	if e.TxnFirstOffset >= 0 && !h.Transactional() {
		return nil, fmt.Errorf("%w: producer %d has a transaction open since offset %d", ErrInvalidTxnState, h.ProducerID, e.TxnFirstOffset)
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

// CheckMarker decides whether a transaction marker for producer id at
// epoch, written by a coordinator at coordinatorEpoch for a transaction of
// transactionVersion, may be appended, as Kafka's appendEndTxnMarker does:
// not below the producer's epoch (ErrProducerFenced), nor below the
// coordinator epoch of its last marker (ErrCoordinatorFenced). A
// transactions v2 marker (transactionVersion 2, KIP-1228) carries the
// epoch its end bumped to, so it must be above the producer's epoch, or at
// it only when no transaction is open (the retry of a marker that was
// written, KAFKA-19999).
func (ps *ProducerState) CheckMarker(id int64, epoch int16, coordinatorEpoch int32, transactionVersion int8) error {
	e, ok := ps.producers[id]
	if !ok {
		return nil
	}
	if epoch < e.Epoch {
		return fmt.Errorf("%w: marker for producer %d at epoch %d < %d", ErrProducerFenced, id, epoch, e.Epoch)
	}
	if transactionVersion >= 2 && epoch == e.Epoch && e.TxnFirstOffset >= 0 {
		return fmt.Errorf("%w: transactions v2 marker for producer %d at its open transaction's epoch %d", ErrProducerFenced, id, epoch)
	}
	if coordinatorEpoch < e.CoordinatorEpoch {
		return fmt.Errorf("%w: marker for producer %d from coordinator epoch %d < %d", ErrCoordinatorFenced, id, coordinatorEpoch, e.CoordinatorEpoch)
	}
	return nil
}

// CompletedTxn is a transaction that a marker ended: FirstOffset is its
// first batch's base offset (the marker's own offset when it had none here)
// and LastOffset the marker's offset.
type CompletedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
	Aborted     bool
}

// Apply records one appended batch, h its header with the assigned offsets
// and raw its bytes: a data batch as Update does; a control batch holding a
// transaction marker ends the producer's transaction (as EndTxn does) and
// returns it with ok. A control batch of another type, or one whose record
// does not parse, changes nothing.
func (ps *ProducerState) Apply(h *batch.Header, raw []byte) (txn CompletedTxn, ok bool) {
	if !h.Control() {
		ps.Update(h)
		return txn, false
	}
	m, isMarker, err := batch.ParseEndTxnMarker(raw)
	if err != nil || !isMarker || h.ProducerID < 0 {
		return txn, false
	}
	return ps.EndTxn(h, m), true
}

// EndTxn records an appended transaction marker m, h its control batch's
// header: the producer's open transaction ends, its epoch becomes the
// marker's (a newer epoch forgets the cached batches, as a bumped epoch
// starts at sequence 0), and the coordinator epoch is remembered.
func (ps *ProducerState) EndTxn(h *batch.Header, m batch.EndTxnMarker) CompletedTxn {
	e, ok := ps.producers[h.ProducerID]
	if !ok {
		e = newEntry(h.ProducerEpoch)
		ps.producers[h.ProducerID] = e
	}
	if h.ProducerEpoch != e.Epoch {
		e.Epoch, e.Batches = h.ProducerEpoch, nil
	}
	txn := CompletedTxn{ProducerID: h.ProducerID, FirstOffset: h.BaseOffset, LastOffset: h.BaseOffset, Aborted: !m.Commit}
	if e.TxnFirstOffset >= 0 {
		txn.FirstOffset = e.TxnFirstOffset
	}
	e.TxnFirstOffset = -1
	delete(ps.open, h.ProducerID)
	e.CoordinatorEpoch = m.CoordinatorEpoch
	e.LastTimestamp = h.MaxTimestamp
	return txn
}

// Update records an appended data batch (with its assigned offsets in h);
// a transactional one opens the producer's transaction if none is. A
// control batch is Apply's.
func (ps *ProducerState) Update(h *batch.Header) {
	if h.ProducerID < 0 || h.Control() {
		return
	}
	e, ok := ps.producers[h.ProducerID]
	if !ok {
		e = newEntry(h.ProducerEpoch)
		ps.producers[h.ProducerID] = e
	} else if h.ProducerEpoch != e.Epoch {
		// A bumped epoch keeps the open transaction and the coordinator
		// epoch (Kafka's maybeUpdateProducerEpoch): only a marker ends it.
		e.Epoch, e.Batches = h.ProducerEpoch, nil
	}
	e.LastTimestamp = h.MaxTimestamp
	if h.Transactional() && e.TxnFirstOffset < 0 {
		e.TxnFirstOffset = h.BaseOffset
		ps.open[h.ProducerID] = h.BaseOffset
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

// RemoveExpired forgets the producers whose last batch or marker is at
// least expirationMs old at nowMs, and returns how many, as Kafka's
// removeExpiredProducers does (producer.id.expiration.ms): never one with
// a transaction open here, whose LastTimestamp is that of its batches so
// far. The age is that of the entry's LastTimestamp, the max timestamp of
// its last batch (the LogAppendTime on such topics), so a producer whose
// clock runs ahead stays until its timestamp is that old. A producer
// removed may come back with any sequence (Check), as a new one does.
func (ps *ProducerState) RemoveExpired(nowMs, expirationMs int64) int {
	n := 0
	for pid, e := range ps.producers {
		if e.TxnFirstOffset < 0 && nowMs-e.LastTimestamp >= expirationMs {
			delete(ps.producers, pid)
			n++
		}
	}
	return n
}

// TruncateTo forgets batches at or after offset (the log was truncated
// there), and transactions opened at or after it. A transaction that a
// marker at or after offset ended is not reopened: the replica rebuilds
// its state from a snapshot and the log instead (reloadProducersLocked).
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
		if e.TxnFirstOffset >= offset {
			e.TxnFirstOffset = -1
			delete(ps.open, pid)
		}
		if n == 0 && e.TxnFirstOffset < 0 {
			delete(ps.producers, pid)
		}
	}
}

// Snapshot files: `<20-digit offset>.snapshot` in the partition directory, the
// state as of that offset (every batch below it applied). Format, big endian:
// magic "SHPS", version u16 (2), count u32, then per producer: id i64, epoch
// i16, coordinator epoch i32, open transaction's first offset i64 (-1: none),
// last timestamp i64, n u8, n x (firstSeq i32, lastSeq i32, firstOffset
// i64, lastOffset i64, timestamp i64); then a CRC32C of everything before
// it. Version 1, without the coordinator epoch, first offset and last
// timestamp, is still read (no transaction open).
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
	binary.Write(&buf, be, uint16(2))
	binary.Write(&buf, be, uint32(len(ids)))
	for _, id := range ids {
		e := ps.producers[id]
		binary.Write(&buf, be, id)
		binary.Write(&buf, be, e.Epoch)
		binary.Write(&buf, be, e.CoordinatorEpoch)
		binary.Write(&buf, be, e.TxnFirstOffset)
		binary.Write(&buf, be, e.LastTimestamp)
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
	version := be.Uint16(body[4:])
	if version != 1 && version != 2 {
		return nil, fmt.Errorf("%w: version %d", ErrBadSnapshot, version)
	}
	n := be.Uint32(body[6:])
	r := bytes.NewReader(body[10:])
	ps := NewProducerState()
	for i := uint32(0); i < n; i++ {
		var id int64
		var cnt uint8
		e := newEntry(0)
		if binary.Read(r, be, &id) != nil || binary.Read(r, be, &e.Epoch) != nil {
			return nil, fmt.Errorf("%w: producer %d", ErrBadSnapshot, i)
		}
		if version >= 2 && (binary.Read(r, be, &e.CoordinatorEpoch) != nil || binary.Read(r, be, &e.TxnFirstOffset) != nil ||
			binary.Read(r, be, &e.LastTimestamp) != nil || e.TxnFirstOffset < -1) {
			return nil, fmt.Errorf("%w: producer %d", ErrBadSnapshot, i)
		}
		if binary.Read(r, be, &cnt) != nil || cnt > maxCachedBatches {
			return nil, fmt.Errorf("%w: producer %d", ErrBadSnapshot, i)
		}
		if _, dup := ps.producers[id]; dup {
			return nil, fmt.Errorf("%w: producer %d listed twice", ErrBadSnapshot, id)
		}
		e.Batches = make([]batchMeta, cnt)
		for j := range e.Batches {
			if binary.Read(r, be, &e.Batches[j]) != nil {
				return nil, fmt.Errorf("%w: producer %d batch %d", ErrBadSnapshot, i, j)
			}
		}
		if version == 1 && cnt > 0 {
			e.LastTimestamp = e.Batches[cnt-1].Timestamp
		}
		if cnt == 0 {
			e.Batches = nil
		}
		ps.producers[id] = e
		if e.TxnFirstOffset >= 0 {
			ps.open[id] = e.TxnFirstOffset
		}
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrBadSnapshot, r.Len())
	}
	return ps, nil
}

// WriteSnapshot writes the state as of offset to dir on fs atomically
// (segment.WriteFileAtomic: temp, fsync, rename, directory fsync) and, when
// keep > 0, keeps only the newest `keep` snapshots.
func (ps *ProducerState) WriteSnapshot(fs vfs.FS, dir string, offset int64, keep int) error {
	return ps.writeSnapshot(fs, dir, offset, keep, segment.WriteFileAtomic)
}

// writeSnapshotNoSync is WriteSnapshot without fsyncs (segment.WriteFileNoSync):
// after a crash the file may be missing or torn, which its checksum tells;
// loaders then fall back to an older snapshot and replay the log.
func (ps *ProducerState) writeSnapshotNoSync(fs vfs.FS, dir string, offset int64, keep int) error {
	return ps.writeSnapshot(fs, dir, offset, keep, segment.WriteFileNoSync)
}

func (ps *ProducerState) writeSnapshot(fs vfs.FS, dir string, offset int64, keep int, write func(fs vfs.FS, dir, name string, data []byte) error) error {
	if err := write(fs, dir, filepath.Base(snapshotName(dir, offset)), ps.Encode()); err != nil {
		return err
	}
	offs := listSnapshots(fs, dir)
	for keep > 0 && len(offs) > keep {
		fs.Remove(snapshotName(dir, offs[0]))
		offs = offs[1:]
	}
	return nil
}

// PruneSnapshots removes the snapshots below offset (the log start: the
// segments they were taken for are gone), except the newest of them, from
// which recovery could still replay.
func PruneSnapshots(fs vfs.FS, dir string, offset int64) {
	offs := listSnapshots(fs, dir)
	for i := 0; i+1 < len(offs) && offs[i+1] <= offset; i++ {
		fs.Remove(snapshotName(dir, offs[i]))
	}
}

// listSnapshots returns the offsets of the snapshot files in dir, ascending.
func listSnapshots(fs vfs.FS, dir string) []int64 {
	ents, _ := fs.ReadDir(dir)
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
//
// A removal is made durable (a directory fsync) before it returns: a
// snapshot above the log end that came back after a crash, once the log
// has grown past it again, would be loaded as the state of batches the
// log no longer holds. The error is that fsync's; the state is then not
// returned.
func LoadLatestSnapshot(fs vfs.FS, dir string, maxOffset int64) (*ProducerState, int64, error) {
	offs := listSnapshots(fs, dir)
	removed := false
	remove := func(off int64) {
		if err := fs.Remove(snapshotName(dir, off)); err == nil {
			removed = true
		}
	}
	ps, from := NewProducerState(), int64(0)
	for i := len(offs) - 1; i >= 0; i-- {
		if offs[i] > maxOffset {
			remove(offs[i])
			continue
		}
		b, err := fs.ReadFile(snapshotName(dir, offs[i]))
		if err == nil {
			if s, err := DecodeProducerState(b); err == nil {
				ps, from = s, offs[i]
				break
			}
		}
		remove(offs[i])
	}
	if removed {
		if err := vfs.SyncDir(fs, dir); err != nil {
			return nil, 0, fmt.Errorf("syncing the removal of producer snapshots in %s: %w", dir, err)
		}
	}
	return ps, from, nil
}

// MaxProducerID returns the largest producer id the state holds, or -1
// when it holds none (a restore raises the id allocator above it).
func (ps *ProducerState) MaxProducerID() int64 {
	out := int64(-1)
	for id := range ps.producers {
		out = max(out, id)
	}
	return out
}
