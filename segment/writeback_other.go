//go:build !linux

package segment

import "os"

// startWriteback does nothing where sync_file_range does not exist: the
// kernel writes the pages back on its own schedule.
func startWriteback(f *os.File, off, n int64) error { return nil }
