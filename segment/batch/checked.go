package batch

import (
	"encoding/binary"
	"fmt"
)

// Checked is one whole batch with its header, parsed once: the value the
// produce and replication paths hand down, so that no layer below parses
// the header again. Header is what ParseHeader of Raw returns, and the
// stampers below keep it so; a caller that changes Raw any other way owns
// the disagreement. Raw is the caller's buffer, not a copy.
type Checked struct {
	Header Header
	Raw    []byte
}

// ParseAll appends to dst each whole batch of the concatenated batches in
// b, parsed once, in order. It stops at the first header that does not
// parse or batch that b does not hold whole (ErrCorrupt), returning the
// batches before it with the error, as Split would report it. It does not
// verify CRCs. The Raw of each result aliases b.
func ParseAll(dst []Checked, b []byte) ([]Checked, error) {
	for len(b) > 0 {
		h, err := ParseHeader(b)
		if err != nil {
			return dst, err
		}
		n := h.Size()
		if n > len(b) {
			return dst, fmt.Errorf("%w: batch of %d bytes, %d left", ErrCorrupt, n, len(b))
		}
		dst = append(dst, Checked{Header: h, Raw: b[:n]})
		b = b[n:]
	}
	return dst, nil
}

// SetBaseOffset is SetBaseOffset on c.Raw, with c.Header following it.
func (c *Checked) SetBaseOffset(off int64) {
	SetBaseOffset(c.Raw, off)
	c.Header.BaseOffset = off
}

// SetPartitionLeaderEpoch is SetPartitionLeaderEpoch on c.Raw, with
// c.Header following it.
func (c *Checked) SetPartitionLeaderEpoch(epoch int32) {
	SetPartitionLeaderEpoch(c.Raw, epoch)
	c.Header.PartitionLeaderEpoch = epoch
}

// SetLogAppendTime is SetLogAppendTime on c.Raw, with c.Header following
// it (the attribute, the max timestamp and the new CRC).
func (c *Checked) SetLogAppendTime(ts int64) {
	SetLogAppendTime(c.Raw, ts)
	c.Header.Attributes |= attrLogAppendTime
	c.Header.MaxTimestamp = ts
	c.Header.CRC = binary.BigEndian.Uint32(c.Raw[offCRC:])
}

// Recompress replaces c with its batch recompressed under codec to, as
// Recompress does (same checks and errors), without parsing the header
// again: c.Raw becomes a new buffer that c owns, and c.Header follows it
// (the codec bits, the length and the CRC). On an error c is unchanged.
func (c *Checked) Recompress(to Codec, maxDecompressed int) error {
	out, h, err := recompress(nil, c.Raw, &c.Header, to, maxDecompressed)
	if err != nil {
		return err
	}
	c.Raw, c.Header = out, h
	return nil
}
