// Package dumplog prints the contents of segment files for operators, as
// Kafka's kafka-dump-log (DumpLogSegments) does: it is the engine of
// `shale segment dump`. It reads `.log` files (concatenated RecordBatch v2,
// as Kafka and Shale write them), `.index` files (offset -> position),
// `.timeindex` files (timestamp -> offset) and `.txnindex` files (aborted
// transactions), and checks the offset and time indexes against the `.log`
// beside them.
//
// Dump reports damage instead of stopping at it: a torn or corrupt tail of
// a `.log`, a batch with a bad CRC, an index entry that points nowhere. It
// returns an error only when it cannot read a file or write its output.
// The package sits on segment/batch and imports no other Shale package.
package dumplog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

// Options choose what Dump prints.
type Options struct {
	// Records prints every record of every batch (offset, timestamp, key,
	// value and headers), like kafka-dump-log --print-data-log.
	Records bool
	// JSON prints one JSON object per file, one per line, instead of text.
	JSON bool
	// MaxDecompressed bounds the decompressed size of one batch's records;
	// zero means DefaultMaxDecompressed. A larger batch is reported.
	MaxDecompressed int
}

// DefaultMaxDecompressed is the decompression bound when Options leaves it 0.
const DefaultMaxDecompressed = 64 << 20

// ErrFileName means an index file's name is not a 20-digit base offset
// followed by its extension, so its relative offsets cannot be resolved.
var ErrFileName = errors.New("dumplog: file name is not a 20-digit base offset")

// Dump writes a description of each file to w, in order. Files are told
// apart by extension: .log, .index, .timeindex and .txnindex; others are reported as
// ignored, as Kafka does. Each file's problems are part of the output; the
// returned error joins the files that could not be read (wrapping the
// underlying error) and the first write error on w.
func Dump(w io.Writer, files []string, opts Options) error {
	if opts.MaxDecompressed <= 0 {
		opts.MaxDecompressed = DefaultMaxDecompressed
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	out := &output{w: bw, json: opts.JSON}
	var errs []error
	for _, path := range files {
		var err error
		switch filepath.Ext(path) {
		case ".log":
			err = dumpLog(out, path, opts)
		case ".index":
			err = dumpIndex(out, path)
		case ".timeindex":
			err = dumpTimeIndex(out, path)
		case ".txnindex":
			err = dumpTxnIndex(out, path)
		default:
			out.ignored(path)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("dumplog: %s: %w", path, err))
		}
	}
	if out.err != nil {
		errs = append(errs, fmt.Errorf("dumplog: writing output: %w", out.err))
	} else if err := bw.Flush(); err != nil {
		errs = append(errs, fmt.Errorf("dumplog: writing output: %w", err))
	}
	return errors.Join(errs...)
}

// baseOffsetOf parses the base offset from a segment file name such as
// 00000000000000000100.index.
func baseOffsetOf(path string) (int64, error) {
	name := filepath.Base(path)
	stem := strings.TrimSuffix(name, filepath.Ext(name))
	if len(stem) != 20 {
		return 0, fmt.Errorf("%w: %q", ErrFileName, name)
	}
	off, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || off < 0 {
		return 0, fmt.Errorf("%w: %q", ErrFileName, name)
	}
	return off, nil
}

// logBeside returns the .log path that an index file describes.
func logBeside(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".log"
}
