package dumplog

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/shale-io/shale/segment/batch"
)

// BatchInfo describes one batch of a .log file; it is also the JSON shape.
type BatchInfo struct {
	Position             int64        `json:"position"`
	Size                 int          `json:"size"`
	BaseOffset           int64        `json:"baseOffset"`
	LastOffset           int64        `json:"lastOffset"`
	Count                int32        `json:"count"`
	PartitionLeaderEpoch int32        `json:"partitionLeaderEpoch"`
	ProducerID           int64        `json:"producerId"`
	ProducerEpoch        int16        `json:"producerEpoch"`
	BaseSequence         int32        `json:"baseSequence"`
	LastSequence         int32        `json:"lastSequence"`
	Magic                int8         `json:"magic"`
	Codec                string       `json:"compressCodec"`
	TimestampType        string       `json:"timestampType"`
	FirstTimestamp       int64        `json:"firstTimestamp"`
	MaxTimestamp         int64        `json:"maxTimestamp"`
	IsTransactional      bool         `json:"isTransactional"`
	IsControl            bool         `json:"isControl"`
	CRC                  uint32       `json:"crc"`
	IsValid              bool         `json:"isValid"`
	Records              []RecordInfo `json:"records,omitempty"`
	RecordsError         string       `json:"recordsError,omitempty"`
}

// RecordInfo describes one record; Key and Value are null, or text with
// KeyEncoding/ValueEncoding "utf8" or "hex".
type RecordInfo struct {
	Offset           int64        `json:"offset"`
	Timestamp        int64        `json:"timestamp"`
	Sequence         int32        `json:"sequence"`
	KeySize          int          `json:"keySize"`
	ValueSize        int          `json:"valueSize"`
	Key              *string      `json:"key"`
	KeyEncoding      string       `json:"keyEncoding,omitempty"`
	Value            *string      `json:"value"`
	ValueEncoding    string       `json:"valueEncoding,omitempty"`
	Headers          []HeaderInfo `json:"headers"`
	EndTxnMarker     string       `json:"endTxnMarker,omitempty"`
	CoordinatorEpoch *int32       `json:"coordinatorEpoch,omitempty"`

	raw batch.Record // for text output
}

// HeaderInfo is one record header in JSON output.
type HeaderInfo struct {
	Key           string  `json:"key"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"valueEncoding,omitempty"`
}

// TailProblem reports where and why reading a .log stopped early.
type TailProblem struct {
	Position int64  `json:"position"`
	Bytes    int64  `json:"bytes"`
	Reason   string `json:"reason"`
}

func dumpLog(out *output, path string, opts Options) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	base, nameErr := baseOffsetOf(path)
	if out.json {
		out.beginObject("file", path, "kind", "log")
		if nameErr == nil {
			out.field("baseOffset", base)
		}
		out.beginArray("batches")
	} else {
		out.printf("Dumping %s\n", path)
		if nameErr == nil {
			out.printf("Log starting offset: %d\n", base)
		}
	}

	r := &segmentReader{f: f, size: st.Size()}
	var (
		pos  int64
		tail *TailProblem
		buf  []byte
	)
	for pos < r.size {
		h, problem, err := r.header(pos)
		if err != nil {
			return err
		}
		if problem != "" {
			tail = &TailProblem{Position: pos, Bytes: r.size - pos, Reason: problem}
			break
		}
		if cap(buf) < h.Size() {
			buf = make([]byte, h.Size())
		}
		buf = buf[:h.Size()]
		if _, err := f.ReadAt(buf, pos); err != nil && err != io.EOF {
			return err
		}
		info := describeBatch(&h, pos, buf)
		if opts.Records {
			info.Records, info.RecordsError = describeRecords(&h, buf, opts.MaxDecompressed)
		}
		if out.json {
			out.element(&info)
		} else {
			printBatch(out, &info, opts.Records)
		}
		pos += int64(h.Size())
	}

	if out.json {
		out.endArray()
		out.field("validBytes", pos)
		out.field("tail", tail)
		out.endObject()
		return nil
	}
	if tail != nil {
		out.printf("Found %d invalid bytes at the end of %s: position: %d reason: %s\n", tail.Bytes, path, tail.Position, tail.Reason)
	}
	return nil
}

// segmentReader reads batch headers of a .log by position.
type segmentReader struct {
	f    io.ReaderAt
	size int64
	hdr  [batch.HeaderSize]byte
}

// header reads and parses the batch header at pos. A batch that cannot be
// read whole (short header, bad magic or length, or a size past the end of
// the file) gives a problem description; err is only for I/O failures.
func (r *segmentReader) header(pos int64) (batch.Header, string, error) {
	left := r.size - pos
	if left < batch.HeaderSize {
		return batch.Header{}, fmt.Sprintf("%d bytes left, too few for a batch header", left), nil
	}
	if _, err := r.f.ReadAt(r.hdr[:], pos); err != nil && err != io.EOF {
		return batch.Header{}, "", err
	}
	h, err := batch.ParseHeader(r.hdr[:])
	if err != nil {
		return h, err.Error(), nil
	}
	if int64(h.Size()) > left {
		return h, fmt.Sprintf("batch of %d bytes at offset %d, only %d bytes left (torn write)", h.Size(), h.BaseOffset, left), nil
	}
	return h, "", nil
}

func describeBatch(h *batch.Header, pos int64, b []byte) BatchInfo {
	tsType := "CreateTime"
	if h.LogAppendTime() {
		tsType = "LogAppendTime"
	}
	return BatchInfo{
		Position: pos, Size: h.Size(), BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), Count: h.NumRecords,
		PartitionLeaderEpoch: h.PartitionLeaderEpoch, ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch,
		BaseSequence: h.BaseSequence, LastSequence: h.LastSequence(), Magic: h.Magic, Codec: h.Codec().String(),
		TimestampType: tsType, FirstTimestamp: h.FirstTimestamp, MaxTimestamp: h.MaxTimestamp,
		IsTransactional: h.Transactional(), IsControl: h.Control(), CRC: h.CRC, IsValid: batch.VerifyCRC(b) == nil,
	}
}

// describeRecords decodes the records of b; a decoding failure is returned
// as text beside the records decoded before it.
func describeRecords(h *batch.Header, b []byte, maxDecompressed int) ([]RecordInfo, string) {
	var recs []RecordInfo
	err := batch.ForEachRecord(b, maxDecompressed, func(r *batch.Record) error {
		ri := RecordInfo{
			Offset:    h.BaseOffset + int64(r.OffsetDelta),
			Timestamp: h.FirstTimestamp + r.TimestampDelta,
			Sequence:  -1,
			KeySize:   sizeOf(r.Key),
			ValueSize: sizeOf(r.Value),
			Headers:   []HeaderInfo{},
		}
		if h.LogAppendTime() {
			ri.Timestamp = h.MaxTimestamp
		}
		if h.BaseSequence >= 0 {
			ri.Sequence = int32((int64(h.BaseSequence) + int64(r.OffsetDelta)) % (1 << 31))
		}
		if h.Control() {
			ri.EndTxnMarker, ri.CoordinatorEpoch = controlMarker(r.Key, r.Value)
		}
		ri.Key, ri.KeyEncoding = jsonBytes(r.Key)
		ri.Value, ri.ValueEncoding = jsonBytes(r.Value)
		for _, hd := range r.Headers {
			v, enc := jsonBytes(hd.Value)
			ri.Headers = append(ri.Headers, HeaderInfo{Key: hd.Key, Value: v, ValueEncoding: enc})
		}
		ri.raw = *r
		ri.raw.Headers = append([]batch.RecordHeader(nil), r.Headers...)
		recs = append(recs, ri)
		return nil
	})
	if err != nil {
		return recs, err.Error()
	}
	return recs, ""
}

func sizeOf(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// controlMarker decodes a transaction marker: key (version int16, type
// int16: 0 ABORT, 1 COMMIT), value (version int16, coordinator epoch int32).
func controlMarker(key, value []byte) (string, *int32) {
	if len(key) < 4 {
		return "", nil
	}
	var typ string
	switch binary.BigEndian.Uint16(key[2:]) {
	case 0:
		typ = "ABORT"
	case 1:
		typ = "COMMIT"
	default:
		return fmt.Sprintf("UNKNOWN(%d)", binary.BigEndian.Uint16(key[2:])), nil
	}
	if len(value) < 6 {
		return typ, nil
	}
	epoch := int32(binary.BigEndian.Uint32(value[2:]))
	return typ, &epoch
}

// printBatch writes a batch in kafka-dump-log's text layout, with
// firstTimestamp appended after Kafka's fields.
func printBatch(out *output, b *BatchInfo, records bool) {
	out.printf("baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t firstTimestamp: %d\n",
		b.BaseOffset, b.LastOffset, b.Count, b.BaseSequence, b.LastSequence, b.ProducerID, b.ProducerEpoch,
		b.PartitionLeaderEpoch, b.IsTransactional, b.IsControl, b.Position, b.TimestampType, b.MaxTimestamp,
		b.Size, b.Magic, b.Codec, b.CRC, b.IsValid, b.FirstTimestamp)
	if !records {
		return
	}
	for i := range b.Records {
		r := &b.Records[i]
		out.printf("| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [", r.Offset, b.TimestampType, r.Timestamp, r.KeySize, r.ValueSize, r.Sequence)
		for j, hd := range r.raw.Headers {
			if j > 0 {
				out.printf(",")
			}
			out.printf("%s", hd.Key)
		}
		out.printf("]")
		if b.IsControl && r.EndTxnMarker != "" {
			out.printf(" endTxnMarker: %s", r.EndTxnMarker)
			if r.CoordinatorEpoch != nil {
				out.printf(" coordinatorEpoch: %d", *r.CoordinatorEpoch)
			}
			out.printf("\n")
			continue
		}
		if r.raw.Key != nil {
			out.printf(" key: %s", showBytes(r.raw.Key))
		}
		out.printf(" payload: %s", showBytes(r.raw.Value))
		if len(r.raw.Headers) > 0 {
			out.printf(" headers: [")
			for j, hd := range r.raw.Headers {
				if j > 0 {
					out.printf(",")
				}
				out.printf("%s=%s", hd.Key, showBytes(hd.Value))
			}
			out.printf("]")
		}
		out.printf("\n")
	}
	if b.RecordsError != "" {
		out.printf("| error: %s\n", b.RecordsError)
	}
}
