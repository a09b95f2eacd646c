package fetch

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
)

// body is a Fetch response body built from encoded bytes, file ranges and
// in-memory byte slices: local record batches go from the segment files to
// the socket without passing through user space
// (kafka.ResponseWriter.SendFile); batches read from remote segments are
// already in memory and are written as they are.
type body struct {
	buf    []byte  // encoded fields; file ranges are spliced in at marks
	pieces []piece // in order
	n      int
}

// piece is buf[from:to], a file range, or mem.
type piece struct {
	from, to int
	mem      []byte
	file     segment.File
	pos      int64
	size     int
}

func (b *body) Len() int { return b.n }

func (b *body) WriteTo(w *kafka.ResponseWriter) error {
	for _, p := range b.pieces {
		if p.file != nil {
			if err := sendFile(w, p.file, p.pos, p.size); err != nil {
				return err
			}
			continue
		}
		if p.mem != nil {
			if _, err := w.Write(p.mem); err != nil {
				return err
			}
			continue
		}
		if _, err := w.Write(b.buf[p.from:p.to]); err != nil {
			return err
		}
	}
	return nil
}

// encoder appends Kafka primitives to a body, flexible or not.
type encoder struct {
	b        *body
	flexible bool
	mark     int // start of the bytes not yet cut into a piece
}

func (e *encoder) i16(v int16) { e.b.buf = binary.BigEndian.AppendUint16(e.b.buf, uint16(v)) }
func (e *encoder) i32(v int32) { e.b.buf = binary.BigEndian.AppendUint32(e.b.buf, uint32(v)) }
func (e *encoder) i64(v int64) { e.b.buf = binary.BigEndian.AppendUint64(e.b.buf, uint64(v)) }
func (e *encoder) uvarint(v uint64) {
	e.b.buf = binary.AppendUvarint(e.b.buf, v)
}

// arrayLen writes an array length (-1 for null).
func (e *encoder) arrayLen(n int) {
	if e.flexible {
		e.uvarint(uint64(n + 1))
		return
	}
	e.i32(int32(n))
}

func (e *encoder) str(s string) {
	if e.flexible {
		e.uvarint(uint64(len(s) + 1))
	} else {
		e.i16(int16(len(s)))
	}
	e.b.buf = append(e.b.buf, s...)
}

// tags writes an empty tagged-field section (flexible versions only).
func (e *encoder) tags() {
	if e.flexible {
		e.uvarint(0)
	}
}

// uuid writes a 16-byte UUID (a topic id).
func (e *encoder) uuid(id [16]byte) { e.b.buf = append(e.b.buf, id[:]...) }

// partitionTags writes a Fetch response partition's tagged-field section
// (flexible versions only): DivergingEpoch (tag 0) and CurrentLeader (tag
// 1), each when set, in tag order.
func (e *encoder) partitionTags(v int16, d *divergingEpoch, l *leaderHint) {
	if !e.flexible {
		return
	}
	n := 0
	if d != nil {
		n++
	}
	if l != nil {
		n++
	}
	e.uvarint(uint64(n))
	if d != nil {
		e.uvarint(0)         // tag 0: DivergingEpoch
		e.uvarint(4 + 8 + 1) // its size
		e.i32(d.epoch)
		e.i64(d.endOffset)
		e.uvarint(0) // no tags of its own
	}
	if l != nil {
		e.uvarint(1)         // tag 1: CurrentLeader
		e.uvarint(4 + 4 + 1) // its size
		e.i32(l.id)
		e.i32(l.epoch)
		e.uvarint(0)
	}
}

// nodeEndpointsTag writes a Fetch response's top-level tagged-field
// section holding NodeEndpoints (tag 0, v16+, KIP-951).
func (e *encoder) nodeEndpointsTag(eps []partition.NodeEndpoint) {
	f := &encoder{b: &body{}, flexible: true}
	f.arrayLen(len(eps))
	for _, ep := range eps {
		f.i32(ep.NodeID)
		f.str(ep.Host)
		f.i32(ep.Port)
		if ep.Rack == nil {
			f.uvarint(0) // null
		} else {
			f.str(*ep.Rack)
		}
		f.tags()
	}
	e.uvarint(1) // one tagged field
	e.uvarint(0) // tag 0: NodeEndpoints
	e.uvarint(uint64(len(f.b.buf)))
	e.b.buf = append(e.b.buf, f.b.buf...)
}

// bytesLen writes the length prefix of a nullable bytes field (-1 for null).
func (e *encoder) bytesLen(n int) {
	if e.flexible {
		e.uvarint(uint64(n + 1))
		return
	}
	e.i32(int32(n))
}

// sendFile sends a segment file range: with sendfile when f is an
// operating-system file (always, but on a test's in-memory filesystem),
// else read into memory.
func sendFile(w *kafka.ResponseWriter, f segment.File, pos int64, size int) error {
	if of, ok := f.(*os.File); ok {
		return w.SendFile(of, pos, size)
	}
	b := make([]byte, size)
	if n, err := f.ReadAt(b, pos); n < size {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("fetch: read %s: %w", f.Name(), err)
	}
	_, err := w.Write(b)
	return err
}

// file splices a file range into the body at the current position.
func (e *encoder) file(f segment.File, pos int64, size int) {
	e.cut()
	e.b.pieces = append(e.b.pieces, piece{file: f, pos: pos, size: size})
	e.b.n += size
}

// raw splices bytes into the body at the current position; the body keeps
// b until it is written.
func (e *encoder) raw(b []byte) {
	e.cut()
	e.b.pieces = append(e.b.pieces, piece{mem: b})
	e.b.n += len(b)
}

// cut closes the current run of encoded bytes as a piece.
func (e *encoder) cut() {
	if len(e.b.buf) > e.mark {
		e.b.pieces = append(e.b.pieces, piece{from: e.mark, to: len(e.b.buf)})
		e.b.n += len(e.b.buf) - e.mark
		e.mark = len(e.b.buf)
	}
}

func (e *encoder) finish() *body {
	e.cut()
	return e.b
}
