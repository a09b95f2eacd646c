package segment

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing out the dirty pages of
// f in [off, off+n) that are not being written already; it does not wait
// for them (sync_file_range with SYNC_FILE_RANGE_WRITE).
func startWriteback(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	cerr := rc.Control(func(fd uintptr) {
		err = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
	if cerr != nil {
		return cerr
	}
	return err
}
