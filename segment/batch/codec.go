package batch

import (
	"errors"
	"fmt"
	"io"
)

// Compress appends the compressed form of src under codec c to dst and
// returns the extended slice. CodecNone appends src unchanged. The output is
// what a Kafka client produces for the codec: a gzip member, xerial-framed
// snappy (as the Java client writes), an LZ4 frame with 64 KiB blocks, or a
// zstd frame. Compress is safe for concurrent use; its encoders are pooled.
// The caller owns the returned slice; src is not retained.
func Compress(c Codec, dst, src []byte) ([]byte, error) {
	switch c {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		return compressGzip(dst, src)
	case CodecSnappy:
		return appendXerial(dst, src)
	case CodecLZ4:
		return compressLZ4(dst, src)
	case CodecZstd:
		return compressZstd(dst, src), nil
	}
	return dst, fmt.Errorf("%w: unknown codec %d", ErrCodec, int8(c))
}

// Decompress appends the decompressed form of src under codec c to dst and
// returns the extended slice. At most maxSize bytes are produced: a larger
// output (a decompression bomb, or simply a batch over the caller's limit)
// gives ErrTooLarge, and the work and memory spent before noticing are
// bounded by maxSize (plus fixed per-codec buffers), never by what the input
// claims. Malformed input gives ErrCodec. Snappy accepts both raw blocks and
// the xerial framing of the Java client. CodecNone appends src.
//
// Decompress is safe for concurrent use; its decoders are pooled. The caller
// owns the returned slice; src is not retained. On error the returned slice
// is dst, possibly with garbage appended past its original length.
func Decompress(c Codec, dst, src []byte, maxSize int) ([]byte, error) {
	if maxSize < 0 {
		maxSize = 0
	}
	switch c {
	case CodecNone:
		if len(src) > maxSize {
			return dst, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(src), maxSize)
		}
		return append(dst, src...), nil
	case CodecGzip:
		return decompressGzip(dst, src, maxSize)
	case CodecSnappy:
		return decompressSnappy(dst, src, maxSize)
	case CodecLZ4:
		return decompressLZ4(dst, src, maxSize)
	case CodecZstd:
		return decompressZstd(dst, src, maxSize)
	}
	return dst, fmt.Errorf("%w: unknown codec %d", ErrCodec, int8(c))
}

// readBounded appends everything r yields to dst, failing with ErrTooLarge
// once more than maxSize bytes come out. It reads in chunks so that memory
// follows the real output, not a size the input claims.
func readBounded(dst []byte, r io.Reader, maxSize int, codec Codec) ([]byte, error) {
	start := len(dst)
	for {
		if len(dst) == cap(dst) {
			// Grow by doubling, but never past what the limit allows plus
			// one byte (to detect overflow) and never by less than 4 KiB.
			room := maxSize + 1 - (len(dst) - start)
			grow := max(min(max(cap(dst)-start, 4<<10), room), 1)
			dst = append(dst, make([]byte, grow)...)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst)-start > maxSize {
			return dst, fmt.Errorf("%w: %s output exceeds %d bytes", ErrTooLarge, codec, maxSize)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, fmt.Errorf("%w: %s: %w", ErrCodec, codec, err)
		}
	}
}

// codecErr wraps a codec library error as ErrCodec unless it is already one
// of ours.
func codecErr(c Codec, err error) error {
	if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrCodec) {
		return err
	}
	return fmt.Errorf("%w: %s: %w", ErrCodec, c, err)
}

// bytesWriter is an io.Writer appending to a slice, so that stream encoders
// can write straight into the caller's dst.
type bytesWriter struct{ b []byte }

func (w *bytesWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
