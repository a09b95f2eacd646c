//go:build linux

package kafka

import (
	"errors"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// errSendfileUnsupported: sendfile(2) refused the file or socket before
// sending anything; the caller copies instead.
var errSendfileUnsupported = errors.New("sendfile unsupported")

// sendFile sends n bytes of f from offset to the socket behind raw with
// sendfile(2), passing the offset explicitly so that f's position is not
// touched. On EAGAIN it returns false to raw.Write, so the runtime poller
// waits for the socket to become writable (honouring write deadlines). It
// returns the bytes sent.
func sendFile(raw syscall.RawConn, f *os.File, offset int64, n int) (int, error) {
	fraw, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var sent int
	var sendErr error
	ctlErr := fraw.Control(func(infd uintptr) {
		writeErr := raw.Write(func(outfd uintptr) bool {
			for sent < n {
				m, err := unix.Sendfile(int(outfd), int(infd), &offset, n-sent)
				if m > 0 {
					sent += m
				}
				switch {
				case err == unix.EAGAIN:
					return false
				case err == unix.EINTR:
					continue
				case (err == unix.EINVAL || err == unix.ENOSYS || err == unix.EOPNOTSUPP) && sent == 0:
					sendErr = errSendfileUnsupported
					return true
				case err != nil:
					sendErr = err
					return true
				case m == 0:
					sendErr = io.ErrUnexpectedEOF // f is shorter than offset+n
					return true
				}
			}
			return true
		})
		if sendErr == nil {
			sendErr = writeErr
		}
	})
	if sendErr == nil {
		sendErr = ctlErr
	}
	return sent, sendErr
}
