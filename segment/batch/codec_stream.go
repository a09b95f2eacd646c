package batch

import (
	"bytes"
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
	w := gzipWriters.Get().(*gzip.Writer)
	out := &bytesWriter{b: dst}
	w.Reset(out)
	_, err := w.Write(src)
	if err == nil {
		err = w.Close()
	}
	w.Reset(nil)
	gzipWriters.Put(w)
	if err != nil {
		return dst, codecErr(CodecGzip, err)
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
	w := lz4Writers.Get().(*lz4.Writer)
	out := &bytesWriter{b: dst}
	w.Reset(out)
	_, err := w.Write(src)
	if err == nil {
		err = w.Close()
	}
	w.Reset(nil)
	lz4Writers.Put(w)
	if err != nil {
		return dst, codecErr(CodecLZ4, err)
	}
	return out.b, nil
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
