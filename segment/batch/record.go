package batch

import (
	"fmt"
)

// Record is one record of a RecordBatch v2, as stored inside the batch. A
// nil Key or Value (or header Value) is null (length -1); an empty non-nil
// slice is empty. Offsets and timestamps are deltas from the batch header's
// BaseOffset and FirstTimestamp.
type Record struct {
	OffsetDelta    int32
	TimestampDelta int64
	Key, Value     []byte
	Headers        []RecordHeader
	Attributes     int8
}

// RecordHeader is one record header. Kafka forbids a null header key.
type RecordHeader struct {
	Key   string
	Value []byte
}

// minRecordSize is the smallest encoded record body: attributes, timestamp
// delta, offset delta, key length, value length and header count, one byte
// each. It bounds how many records a payload can hold, so that a lying count
// never sizes an allocation.
const minRecordSize = 6

// Records decodes every record of the whole batch b (exactly one batch,
// as Validate or Split gives), decompressing as needed up to maxDecompressed
// bytes (ErrTooLarge beyond). It checks the structure, not the CRC.
//
// The records must number NumRecords, their offset deltas must increase
// strictly and stay within [0, LastOffsetDelta] (a compacted batch may have
// gaps and may have lost its last records), else ErrRecordCount. A record
// whose varints or lengths do not fit gives ErrInvalidRecord.
//
// For an uncompressed batch, Keys, Values and header Values alias b; for a
// compressed one they alias a buffer Records allocates. The caller owns the
// returned slice and must not modify b while using the records.
func Records(b []byte, maxDecompressed int) ([]Record, error) {
	h, payload, err := openPayload(b, nil, maxDecompressed)
	if err != nil {
		return nil, err
	}
	recs := make([]Record, 0, min(int(h.NumRecords), len(payload)/(minRecordSize+1)))
	err = walkRecords(&h, payload, func(r *Record) error {
		rc := *r
		if len(r.Headers) > 0 {
			rc.Headers = append([]RecordHeader(nil), r.Headers...)
		} else {
			rc.Headers = nil
		}
		recs = append(recs, rc)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return recs, nil
}

// ForEachRecord calls fn with each record of the whole batch b in order,
// with the same checks as Records, and stops at the first error (returned
// as is). The *Record and its Headers slice are reused between calls: fn
// must copy what it keeps. Key and Value alias b or a decompression buffer
// that stays valid after ForEachRecord returns. The record count is checked
// after the last call, so fn may see every record of a batch that then
// fails with ErrRecordCount.
func ForEachRecord(b []byte, maxDecompressed int, fn func(r *Record) error) error {
	h, payload, err := openPayload(b, nil, maxDecompressed)
	if err != nil {
		return err
	}
	return walkRecords(&h, payload, fn)
}

// openPayload parses the header of the whole batch b and returns the
// uncompressed record bytes: a subslice of b, or the decompressed records
// appended to scratch.
func openPayload(b, scratch []byte, maxDecompressed int) (Header, []byte, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, nil, err
	}
	payload, err := openParsedPayload(&h, b, scratch, maxDecompressed)
	return h, payload, err
}

// openParsedPayload is openPayload for a batch whose header h is parsed.
func openParsedPayload(h *Header, b, scratch []byte, maxDecompressed int) ([]byte, error) {
	if h.Size() != len(b) {
		return nil, fmt.Errorf("%w: batch length says %d bytes, have %d", ErrCorrupt, h.Size(), len(b))
	}
	payload := b[HeaderSize:]
	if c := h.Codec(); c != CodecNone {
		var err error
		if payload, err = Decompress(c, scratch[:0], payload, maxDecompressed); err != nil {
			return nil, err
		}
	}
	return payload, nil
}

// walkRecords decodes the uncompressed records in payload for header h.
func walkRecords(h *Header, payload []byte, fn func(r *Record) error) error {
	var (
		r       Record
		headers []RecordHeader
		count   int32
		prev    int64 = -1
		pos     int
	)
	for pos < len(payload) {
		if count == h.NumRecords {
			return fmt.Errorf("%w: more records than the %d the header counts (%d bytes left)", ErrRecordCount, h.NumRecords, len(payload)-pos)
		}
		size, n := readVarint32(payload[pos:])
		if n <= 0 || size < minRecordSize || int(size) > len(payload)-pos-n {
			return fmt.Errorf("%w: record %d at byte %d: bad length", ErrInvalidRecord, count, pos)
		}
		body := payload[pos+n : pos+n+int(size)]
		var err error
		if headers, err = decodeRecord(body, &r, headers[:0]); err != nil {
			return fmt.Errorf("%w: record %d at byte %d: %s", ErrInvalidRecord, count, pos, err.Error())
		}
		if int64(r.OffsetDelta) <= prev || r.OffsetDelta > h.LastOffsetDelta {
			return fmt.Errorf("%w: record %d has offset delta %d after %d, last offset delta %d", ErrRecordCount, count, r.OffsetDelta, prev, h.LastOffsetDelta)
		}
		prev = int64(r.OffsetDelta)
		r.Headers = headers
		if err := fn(&r); err != nil {
			return err
		}
		count++
		pos += n + int(size)
	}
	if count != h.NumRecords {
		return fmt.Errorf("%w: header counts %d records, found %d", ErrRecordCount, h.NumRecords, count)
	}
	return nil
}

// recordError is a plain description; walkRecords wraps it in ErrInvalidRecord.
type recordError string

func (e recordError) Error() string { return string(e) }

// decodeRecord decodes one record body (after its length) into r, appending
// its headers to headers. Every byte of body must be used.
func decodeRecord(body []byte, r *Record, headers []RecordHeader) ([]RecordHeader, error) {
	r.Attributes = int8(body[0])
	p := 1
	var n int
	if r.TimestampDelta, n = readVarint64(body[p:]); n <= 0 {
		return headers, recordError("bad timestamp delta")
	}
	p += n
	if r.OffsetDelta, n = readVarint32(body[p:]); n <= 0 {
		return headers, recordError("bad offset delta")
	}
	p += n
	var ok bool
	if r.Key, n, ok = readBytes(body[p:]); !ok {
		return headers, recordError("bad key")
	}
	p += n
	if r.Value, n, ok = readBytes(body[p:]); !ok {
		return headers, recordError("bad value")
	}
	p += n
	count, n := readVarint32(body[p:])
	if n <= 0 || count < 0 || int(count) > (len(body)-p-n)/2 {
		return headers, recordError("bad header count")
	}
	p += n
	for range count {
		k, n, ok := readBytes(body[p:])
		if !ok || k == nil {
			return headers, recordError("bad header key")
		}
		p += n
		v, n, ok := readBytes(body[p:])
		if !ok {
			return headers, recordError("bad header value")
		}
		p += n
		headers = append(headers, RecordHeader{Key: string(k), Value: v})
	}
	if p != len(body) {
		return headers, recordError(fmt.Sprintf("%d bytes left after the record", len(body)-p))
	}
	return headers, nil
}
