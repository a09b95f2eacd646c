package batch

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstd encoders are pooled; each is single-threaded (concurrency 1) so that
// the pool, not the encoder, provides parallelism. The 64 KiB window matches
// what franz-go writes and keeps decoder memory small on every client.
var zstdEncoders = sync.Pool{New: func() any {
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(64<<10),
		zstd.WithZeroFrames(true),
	)
	if err != nil {
		panic(fmt.Sprintf("batch: zstd encoder options rejected: %v", err)) // fixed options: a broken invariant
	}
	return enc
}}

func compressZstd(dst, src []byte) []byte {
	enc := zstdEncoders.Get().(*zstd.Encoder)
	dst = enc.EncodeAll(src, dst)
	zstdEncoders.Put(enc)
	return dst
}

// zstdDecoder wraps a decoder so that a cleanup can close it when its pool
// drops it.
type zstdDecoder struct{ d *zstd.Decoder }

// zstdDecoders holds one pool per power-of-two output bound: a decoder's
// memory bound is fixed when it is made, and callers use few distinct
// limits. The exact limit is checked after decoding; the decoder's own bound
// (at most twice the limit) stops a bomb while it is being decoded.
var zstdDecoders [65]sync.Pool

func zstdBucket(maxSize int) int {
	if maxSize <= 1<<10 {
		return 10 // tiny limits share one pool; the exact check follows decoding
	}
	return bits.Len(uint(maxSize - 1))
}

func getZstdDecoder(bucket int) (*zstdDecoder, error) {
	if v := zstdDecoders[bucket].Get(); v != nil {
		return v.(*zstdDecoder), nil
	}
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(uint64(1)<<bucket),
	)
	if err != nil {
		return nil, fmt.Errorf("%w: zstd decoder: %w", ErrCodec, err)
	}
	zd := &zstdDecoder{d: d}
	runtime.AddCleanup(zd, func(d *zstd.Decoder) { d.Close() }, d)
	return zd, nil
}

func decompressZstd(dst, src []byte, maxSize int) ([]byte, error) {
	bucket := zstdBucket(maxSize)
	zd, err := getZstdDecoder(bucket)
	if err != nil {
		return dst, err
	}
	start := len(dst)
	out, err := zd.d.DecodeAll(src, dst)
	zstdDecoders[bucket].Put(zd)
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded), errors.Is(err, zstd.ErrWindowSizeExceeded):
		return dst, fmt.Errorf("%w: zstd output exceeds %d bytes: %w", ErrTooLarge, maxSize, err)
	case err != nil:
		return dst, codecErr(CodecZstd, err)
	case len(out)-start > maxSize:
		return dst, fmt.Errorf("%w: zstd output of %d bytes exceeds %d", ErrTooLarge, len(out)-start, maxSize)
	}
	return out, nil
}
