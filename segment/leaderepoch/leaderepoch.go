// Package leaderepoch holds the one entry of a leader-epoch history, which
// the local log (segment.EpochEntry) and the remote segment metadata
// (controlplane.EpochEntry) share as aliases, so that tiering passes
// histories between them without converting. It imports nothing.
package leaderepoch

// Entry says that leader epoch Epoch starts at StartOffset: its first batch
// is there, or, for the latest entry of a leader that has not written in its
// epoch yet, the log end offset at its election (segment's Log.AssignEpoch).
// The JSON names are those of the remote metadata and the bucket manifest.
type Entry struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"start_offset"`
}
