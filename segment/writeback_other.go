//go:build !linux

package segment

import "github.com/shale-io/shale/segment/vfs"

// startWriteback does nothing where sync_file_range does not exist: the
// kernel writes the pages back on its own schedule.
func startWriteback(f vfs.File, off, n int64) error { return nil }
