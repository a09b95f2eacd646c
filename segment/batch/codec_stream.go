package batch

import (
	"bytes"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/pierrec/lz4/v4"
)

// gzip and lz4 are stream codecs: their pooled writers and readers are
// reset onto each call's buffers.

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
	return w
}}

func compressGzip(dst, src []byte) ([]byte, error) {
	return compressStream(&gzipWriters, CodecGzip, dst, src)
}

// streamWriter is a pooled stream encoder: gzip's or lz4's writer.
type streamWriter interface {
	io.WriteCloser
	Reset(io.Writer)
}

// compressStream appends src compressed under codec to dst with a
// streamWriter from pool, reset onto dst and back to nil before it
// returns to the pool.
func compressStream(pool *sync.Pool, codec Codec, dst, src []byte) ([]byte, error) {
	w := pool.Get().(streamWriter)
	out := &bytesWriter{b: dst}
	w.Reset(out)
	_, err := w.Write(src)
	if err == nil {
		err = w.Close()
	}
	w.Reset(nil)
	pool.Put(w)
	if err != nil {
		return dst, codecErr(codec, err)
	}
	return out.b, nil
}

// gzipReader pools a gzip reader with the bytes.Reader it reads from.
type gzipReader struct {
	src bytes.Reader
	zr  gzip.Reader
}

var gzipReaders = sync.Pool{New: func() any { return new(gzipReader) }}

func decompressGzip(dst, src []byte, maxSize int) ([]byte, error) {
	r := gzipReaders.Get().(*gzipReader)
	defer gzipReaders.Put(r)
	r.src.Reset(src)
	if err := r.zr.Reset(&r.src); err != nil {
		return dst, codecErr(CodecGzip, err)
	}
	out, err := readBounded(dst, &r.zr, maxSize, CodecGzip)
	r.src.Reset(nil)
	return out, err
}

var lz4Writers = sync.Pool{New: func() any {
	w := lz4.NewWriter(nil)
	// 64 KiB blocks, as Kafka's Java producer writes; no content size.
	_ = w.Apply(lz4.BlockSizeOption(lz4.Block64Kb))
	return w
}}

func compressLZ4(dst, src []byte) ([]byte, error) {
	return compressStream(&lz4Writers, CodecLZ4, dst, src)
}

type lz4Reader struct {
	src bytes.Reader
	zr  *lz4.Reader
}

var lz4Readers = sync.Pool{New: func() any { return &lz4Reader{zr: lz4.NewReader(nil)} }}

func decompressLZ4(dst, src []byte, maxSize int) ([]byte, error) {
	r := lz4Readers.Get().(*lz4Reader)
	defer lz4Readers.Put(r)
	r.src.Reset(src)
	r.zr.Reset(&r.src)
	out, err := readBounded(dst, r.zr, maxSize, CodecLZ4)
	r.zr.Reset(nil)
	r.src.Reset(nil)
	return out, err
}
