// Package coldread serves reads of remote (tiered) segments: the cold half
// of Shale's read path. A Reader finds the segment holding an offset in the
// remote segment metadata (controlplane.RemoteLog: no LIST call on the read
// path), turns the offset into a byte range through the segment's remote
// .index (fetched once and cached), and reads the range through aligned
// chunks of the .log object that ranged GETs fill into a bounded LRU cache.
// Sequential readers get the next chunk read ahead. ListOffsets by timestamp
// uses the remote .timeindex the same way.
//
// All remote I/O runs on a bounded pool of workers owned by the Reader, so a
// burst of cold reads never takes goroutines or connections from hot reads
// or produce; a caller waits for its task at most until its own context
// ends, while the task runs on (bounded by Config.TaskTimeout) and leaves
// its chunks in the cache for the retry.
//
// The package sits under fetch (which calls it through fetch.RemoteReader)
// and above controlplane, infra/objstore and segment/batch.
package coldread
