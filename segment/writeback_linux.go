package segment

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/shale-io/shale/segment/vfs"
)

// startWriteback asks the kernel to start writing out the dirty pages of
// f in [off, off+n) that are not being written already; it does not wait
// for them (sync_file_range with SYNC_FILE_RANGE_WRITE). A file of
// another FS than the operating system's has no pages to write back.
func startWriteback(f vfs.File, off, n int64) error {
	of, ok := f.(*os.File)
	if !ok {
		return nil
	}
	rc, err := of.SyscallConn()
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
