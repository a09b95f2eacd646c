package segment

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/shale-io/shale/segment/vfs"
)

// Config is the per-partition log configuration. Field comments give the
// Kafka topic or broker setting each field mirrors.
type Config struct {
	// SegmentBytes (segment.bytes): roll the active segment when the next
	// batch would make it larger than this. Default 1 GiB.
	SegmentBytes int64 `yaml:"segment_bytes"`
	// SegmentAge (segment.ms): roll when the first batch of the active
	// segment is older than this (its max timestamp against Now). Default 7 days.
	SegmentAge time.Duration `yaml:"segment_ms"`
	// IndexIntervalBytes (index.interval.bytes): add an index entry after at
	// least this many bytes of log since the previous one. Default 4096.
	IndexIntervalBytes int `yaml:"index_interval_bytes"`
	// SegmentIndexBytes (segment.index.bytes): size each index file is
	// preallocated to; a full index rolls the segment. Default 10 MiB.
	SegmentIndexBytes int `yaml:"segment_index_bytes"`
	// FlushMessages (flush.messages): fsync after this many appended records;
	// 0 means never by count.
	FlushMessages int64 `yaml:"flush_messages"`
	// FlushInterval (flush.ms): MaybeFlush fsyncs when the last flush is older than
	// this; 0 means never by time.
	FlushInterval time.Duration `yaml:"flush_ms"`
	// WritebackBytes (Shale's log_writeback_bytes, like RocksDB's
	// bytes_per_sync; Kafka has none): ask the kernel to start writing the
	// active segment out after every this many bytes appended, so that a
	// busy log does not pile up dirty pages for the kernel to write back in
	// bursts that stall appends (writeback.go). It syncs nothing. 0
	// leaves writeback to the kernel. Default 1 MiB.
	WritebackBytes int64 `yaml:"writeback_bytes"`
	// FileDeleteDelay (file.delete.delay.ms): deleted segments are renamed
	// with a .deleted suffix and closed and removed only after this delay, so
	// readers holding their *os.File keep working. Default 60 s.
	FileDeleteDelay time.Duration `yaml:"file_delete_delay"`

	// OnRoll, if set, is called after each roll with the new active
	// segment's base offset, while the log's writer lock is held: it may call
	// the Log's read methods but not Append, Roll, Truncate, Flush or Close.
	OnRoll func(newBaseOffset int64) `yaml:"-"`
	// Decompress, if set, decompresses a batch's records section for codec
	// (1 gzip, 2 snappy, 3 lz4, 4 zstd). OffsetForTimestamp uses it to find
	// the first record at or after a timestamp inside compressed batches;
	// Defaults sets it to franz-go's decompressor.
	Decompress func(codec int8, data []byte) ([]byte, error) `yaml:"-"`
	// Now is the clock (segment.ms, flush.ms, deletion delays). Default time.Now.
	Now func() time.Time `yaml:"-"`
	// Logger receives recovery and deletion reports. Default slog.Default().
	Logger *slog.Logger `yaml:"-"`
	// FS is the filesystem the log lives on. Default vfs.Default, the
	// operating system's; tests use vfs.NewMem to crash it and
	// vfs.WithErrors to fail its calls.
	FS vfs.FS `yaml:"-"`
}

// Defaults returns Kafka's defaults.
func Defaults() Config {
	return Config{
		SegmentBytes:       1 << 30,
		SegmentAge:         7 * 24 * time.Hour,
		IndexIntervalBytes: 4096,
		SegmentIndexBytes:  10 << 20,
		WritebackBytes:     1 << 20,
		FileDeleteDelay:    time.Minute,
		Decompress:         defaultDecompress,
		Now:                time.Now,
		Logger:             slog.Default(),
		FS:                 vfs.Default,
	}
}

// Validate reports the first field out of range, wrapping ErrInvalidConfig.
// A nil Now, Logger or FS is invalid; start from Defaults.
func (c *Config) Validate() error {
	switch {
	case c.SegmentBytes < batchHeaderSize || c.SegmentBytes > math.MaxInt32:
		return fmt.Errorf("%w: segment.bytes %d not in [%d, %d]", ErrInvalidConfig, c.SegmentBytes, batchHeaderSize, math.MaxInt32)
	case c.SegmentAge <= 0:
		return fmt.Errorf("%w: segment.ms %v must be positive", ErrInvalidConfig, c.SegmentAge)
	case c.IndexIntervalBytes < 0:
		return fmt.Errorf("%w: index.interval.bytes %d is negative", ErrInvalidConfig, c.IndexIntervalBytes)
	case c.SegmentIndexBytes < 2*timeIndexEntrySize:
		return fmt.Errorf("%w: segment.index.bytes %d holds fewer than 2 entries", ErrInvalidConfig, c.SegmentIndexBytes)
	case c.FlushMessages < 0:
		return fmt.Errorf("%w: flush.messages %d is negative", ErrInvalidConfig, c.FlushMessages)
	case c.FlushInterval < 0:
		return fmt.Errorf("%w: flush.ms %v is negative", ErrInvalidConfig, c.FlushInterval)
	case c.WritebackBytes < 0:
		return fmt.Errorf("%w: writeback bytes %d is negative", ErrInvalidConfig, c.WritebackBytes)
	case c.FileDeleteDelay < 0:
		return fmt.Errorf("%w: file.delete.delay.ms %v is negative", ErrInvalidConfig, c.FileDeleteDelay)
	case c.Now == nil:
		return fmt.Errorf("%w: nil Now clock", ErrInvalidConfig)
	case c.Logger == nil:
		return fmt.Errorf("%w: nil Logger", ErrInvalidConfig)
	case c.FS == nil:
		return fmt.Errorf("%w: nil FS", ErrInvalidConfig)
	}
	return nil
}
