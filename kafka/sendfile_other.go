//go:build !linux

package kafka

import (
	"errors"
	"os"
	"syscall"
)

var errSendfileUnsupported = errors.New("sendfile unsupported")

// sendFile is only implemented on Linux; elsewhere SendFile copies.
func sendFile(syscall.RawConn, *os.File, int64, int) (int, error) {
	return 0, errSendfileUnsupported
}
