package kafka

import "sync"

const (
	readBufferSize  = 32 << 10 // per-connection bufio.Reader
	writeBufferSize = 32 << 10 // per-connection bufio.Writer
	minPooledFrame  = 4 << 10
	maxPooledBuffer = 1 << 20 // larger frames and encode buffers are left to the GC
)

// framePool holds request frame buffers. A frame is returned once its
// request's reply has been written, because the decoded request may alias
// it.
var framePool = sync.Pool{New: func() any {
	b := make([]byte, 0, minPooledFrame)
	return &b
}}

// getFrame returns a pooled buffer of length n. The caller owns it until
// putFrame.
func getFrame(n int) *[]byte {
	bp := framePool.Get().(*[]byte)
	if cap(*bp) < n {
		if cap(*bp) <= maxPooledBuffer {
			framePool.Put(bp)
		}
		b := make([]byte, n, max(n, minPooledFrame))
		return &b
	}
	*bp = (*bp)[:n]
	return bp
}

// putFrame returns a frame to the pool; nil is ignored.
func putFrame(bp *[]byte) {
	if bp == nil || cap(*bp) > maxPooledBuffer {
		return
	}
	framePool.Put(bp)
}

// encodeBufPool holds response encode buffers.
var encodeBufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 4<<10)
	return &b
}}
