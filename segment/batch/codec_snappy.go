package batch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/klauspost/compress/s2"
)

// Snappy in Kafka comes in two shapes. The Java client writes xerial
// framing (snappy-java's SnappyOutputStream): the 8-byte magic
// "\x82SNAPPY\x00", a version and a minimum compatible version (int32 1 and
// 1), then repeated [int32 length][raw snappy block] of at most 32 KiB of
// input each. Other clients (older librdkafka, some Go clients) send one raw
// snappy block. Shale reads both and writes xerial, which every client reads.

var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16
	xerialBlockSize  = 32 << 10
)

// appendXerial appends src as xerial-framed snappy blocks.
func appendXerial(dst, src []byte) ([]byte, error) {
	if len(src) > math.MaxInt32 {
		return dst, fmt.Errorf("%w: snappy input of %d bytes", ErrTooLarge, len(src))
	}
	dst = append(dst, xerialMagic...)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	for len(src) > 0 {
		n := min(len(src), xerialBlockSize)
		at := len(dst)
		need := 4 + s2.MaxEncodedLen(n)
		if cap(dst)-at < need {
			grown := make([]byte, at, at+need+(cap(dst)-at)+len(src)/2)
			copy(grown, dst)
			dst = grown
		}
		block := s2.EncodeSnappy(dst[at+4:cap(dst)], src[:n])
		binary.BigEndian.PutUint32(dst[at:at+4], uint32(len(block)))
		dst = dst[:at+4+len(block)]
		src = src[n:]
	}
	return dst, nil
}

func decompressSnappy(dst, src []byte, maxSize int) ([]byte, error) {
	if len(src) >= xerialHeaderSize && bytes.HasPrefix(src, xerialMagic) {
		return decodeXerial(dst, src[xerialHeaderSize:], maxSize)
	}
	return decodeSnappyBlock(dst, src, maxSize)
}

// decodeSnappyBlock appends one raw snappy block, checking the length the
// block claims against the room left before allocating anything.
func decodeSnappyBlock(dst, block []byte, room int) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return dst, codecErr(CodecSnappy, err)
	}
	if n > room {
		return dst, fmt.Errorf("%w: snappy block of %d bytes, room for %d", ErrTooLarge, n, room)
	}
	if cap(dst)-len(dst) < n {
		grown := make([]byte, len(dst), len(dst)+n)
		copy(grown, dst)
		dst = grown
	}
	if _, err := s2.Decode(dst[len(dst):len(dst)+n], block); err != nil {
		return dst, codecErr(CodecSnappy, err)
	}
	return dst[:len(dst)+n], nil
}

// decodeXerial decodes the blocks after the xerial header. It first walks
// the block headers to sum the claimed sizes, so that an oversized input is
// refused before any allocation and dst grows once.
func decodeXerial(dst, src []byte, maxSize int) ([]byte, error) {
	total := 0
	for rem := src; len(rem) > 0; {
		if len(rem) < 4 {
			return dst, fmt.Errorf("%w: snappy: truncated xerial block length", ErrCodec)
		}
		size := binary.BigEndian.Uint32(rem)
		rem = rem[4:]
		if uint64(size) > uint64(len(rem)) {
			return dst, fmt.Errorf("%w: snappy: xerial block of %d bytes, %d left", ErrCodec, size, len(rem))
		}
		n, err := s2.DecodedLen(rem[:size])
		if err != nil {
			return dst, codecErr(CodecSnappy, err)
		}
		if n > maxSize-total {
			return dst, fmt.Errorf("%w: snappy output exceeds %d bytes", ErrTooLarge, maxSize)
		}
		total += n
		rem = rem[size:]
	}
	if cap(dst)-len(dst) < total {
		grown := make([]byte, len(dst), len(dst)+total)
		copy(grown, dst)
		dst = grown
	}
	for len(src) > 0 {
		size := binary.BigEndian.Uint32(src)
		var err error
		if dst, err = decodeSnappyBlock(dst, src[4:4+size], maxSize); err != nil {
			return dst, err
		}
		src = src[4+size:]
	}
	return dst, nil
}
