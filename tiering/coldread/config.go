package coldread

import (
	"errors"
	"fmt"
	"time"
)

// ErrInvalidConfig: a Config field out of range.
var ErrInvalidConfig = errors.New("coldread: invalid config")

// Config sizes the cold-read machinery.
type Config struct {
	// ChunkBytes is the size of the aligned ranges fetched from .log
	// objects: chunk i covers [i*ChunkBytes, (i+1)*ChunkBytes). Default
	// 8 MiB; Validate accepts 4-16 MiB.
	ChunkBytes int64 `yaml:"chunk_bytes"`
	// CacheBytes bounds the chunk cache (LRU by bytes, in memory).
	// Default 256 MiB; at least 2 chunks.
	CacheBytes int64 `yaml:"cache_bytes"`
	// IndexCacheBytes bounds the cache of parsed remote .index and
	// .timeindex objects. Default 32 MiB.
	IndexCacheBytes int64 `yaml:"index_cache_bytes"`
	// Workers is the number of goroutines doing remote I/O. Default 4.
	Workers int `yaml:"workers"`
	// QueueLength is how many tasks may wait for a worker before submitters
	// block (read-ahead is dropped instead). Default 64.
	QueueLength int `yaml:"queue_length"`
	// TaskTimeout bounds one task's remote I/O, independently of the
	// caller that submitted it. Default 30 s.
	TaskTimeout time.Duration `yaml:"task_timeout"`
	// ReadAhead turns on read-ahead: a read queues the GETs of the chunks
	// it needs after its first one, and of those a sequential reader will
	// need next (as many bytes as the read asked for, at least
	// ReadAheadChunks chunks), so that they run concurrently on the pool.
	// Default true.
	ReadAhead bool `yaml:"read_ahead"`
	// ReadAheadChunks is the least number of chunks read ahead past the
	// end of a read. Default 2. CacheBytes should hold about
	// ReadAheadChunks+2 chunks for each partition replayed at once.
	ReadAheadChunks int `yaml:"read_ahead_chunks"`
}

// Defaults returns the default configuration.
func Defaults() Config {
	return Config{ChunkBytes: 8 << 20, CacheBytes: 256 << 20, IndexCacheBytes: 32 << 20, Workers: 4,
		QueueLength: 64, TaskTimeout: 30 * time.Second, ReadAhead: true, ReadAheadChunks: 2}
}

// Validate reports the first field out of range, wrapping ErrInvalidConfig.
func (c *Config) Validate() error {
	switch {
	case c.ChunkBytes < 4<<20 || c.ChunkBytes > 16<<20:
		return fmt.Errorf("%w: chunk_bytes %d not in [4 MiB, 16 MiB]", ErrInvalidConfig, c.ChunkBytes)
	}
	return c.validateSizes()
}

// validateSizes checks everything but the chunk size bounds (tests use
// small chunks to cross chunk boundaries with small segments).
func (c *Config) validateSizes() error {
	switch {
	case c.ChunkBytes <= 0:
		return fmt.Errorf("%w: chunk_bytes %d", ErrInvalidConfig, c.ChunkBytes)
	case c.CacheBytes < 2*c.ChunkBytes:
		return fmt.Errorf("%w: cache_bytes %d below two chunks (%d)", ErrInvalidConfig, c.CacheBytes, 2*c.ChunkBytes)
	case c.IndexCacheBytes <= 0:
		return fmt.Errorf("%w: index_cache_bytes %d", ErrInvalidConfig, c.IndexCacheBytes)
	case c.Workers < 1:
		return fmt.Errorf("%w: workers %d", ErrInvalidConfig, c.Workers)
	case c.QueueLength < 1:
		return fmt.Errorf("%w: queue_length %d", ErrInvalidConfig, c.QueueLength)
	case c.TaskTimeout <= 0:
		return fmt.Errorf("%w: task_timeout %v", ErrInvalidConfig, c.TaskTimeout)
	case c.ReadAhead && c.ReadAheadChunks < 1:
		return fmt.Errorf("%w: read_ahead_chunks %d with read_ahead on", ErrInvalidConfig, c.ReadAheadChunks)
	}
	return nil
}
