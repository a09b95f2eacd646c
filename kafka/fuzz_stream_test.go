package kafka

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzMaxRequestBytes bounds the frames of FuzzConnStream, so that a fuzzed
// size prefix past it is tried as often as one below it.
const fuzzMaxRequestBytes = 4 << 10

// expectedAnswers walks stream as the connection's reader does and returns
// the correlation ids the server must answer, in order: one per frame up to
// the first that is cut short, sized out of bounds or fails to decode.
func expectedAnswers(reg *Registry, stream []byte) []int32 {
	var ids []int32
	for len(stream) >= 4 {
		size := int32(binary.BigEndian.Uint32(stream))
		if size < minFrameSize || size > fuzzMaxRequestBytes || int(size) > len(stream)-4 {
			break
		}
		frame := stream[4 : 4+size]
		if _, err := reg.decodeFrame(frame); err != nil {
			break
		}
		ids = append(ids, int32(binary.BigEndian.Uint32(frame[4:])))
		stream = stream[4+size:]
	}
	return ids
}

// FuzzConnStream feeds a byte stream to a real connection of a Server: size
// prefixes, frames, truncation, several requests pipelined. The server must
// answer exactly the requests before the first bad frame, in order, with
// well-formed response frames, and then close the connection, never hang
// or crash.
func FuzzConnStream(f *testing.F) {
	reg := NewRegistry()
	answer := func(_ context.Context, req *Request) (Reply, error) {
		return Reply{Response: req.Msg.ResponseKind()}, nil
	}
	reg.Register(kmsg.Metadata, 0, 12, answer)
	reg.Register(kmsg.Produce, 3, 11, answer)
	reg.Register(kmsg.FindCoordinator, 0, 4, answer)
	s := NewServer(ServerConfig{MaxRequestBytes: fuzzMaxRequestBytes, ReadAhead: 2}, reg, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		s.Shutdown(ctx)
		<-served
	})

	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	seed := func(reqs ...kmsg.Request) []byte {
		var b []byte
		for i, r := range reqs {
			b = fm.AppendRequest(b, r, int32(i+1))
		}
		return b
	}
	f.Add(seed(versioned(kmsg.NewPtrMetadataRequest(), 12), versioned(kmsg.NewPtrApiVersionsRequest(), 3)))
	f.Add(seed(versioned(kmsg.NewPtrProduceRequest(), 9), versioned(kmsg.NewPtrMetadataRequest(), 1), versioned(kmsg.NewPtrApiVersionsRequest(), 9)))
	f.Add(seed(versioned(kmsg.NewPtrFindCoordinatorRequest(), 4), versioned(kmsg.NewPtrFetchRequest(), 4)))
	f.Add(append(seed(versioned(kmsg.NewPtrMetadataRequest(), 4)), 0, 0, 0x10, 0, 1))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 3, 0, 3, 0})

	f.Fuzz(func(t *testing.T, stream []byte) {
		want := expectedAnswers(reg, stream)
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(testTimeout))
		// The server may close before it has read everything (a bad frame):
		// a failed write is part of the game, the answers are what count.
		go func() {
			nc.Write(stream)
			nc.(*net.TCPConn).CloseWrite()
		}()
		br := bufio.NewReader(nc)
		var got []int32
		for {
			var hdr [8]byte
			if _, err := io.ReadFull(br, hdr[:4]); err != nil {
				if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
					break
				}
				t.Fatalf("after %d answers: %v", len(got), err)
			}
			size := int32(binary.BigEndian.Uint32(hdr[:4]))
			if size < 4 {
				t.Fatalf("response frame of %d bytes", size)
			}
			body := make([]byte, size)
			if _, err := io.ReadFull(br, body); err != nil {
				t.Fatalf("response frame cut short: %v", err)
			}
			got = append(got, int32(binary.BigEndian.Uint32(body)))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("answered correlation ids %v, want %v", got, want)
		}
	})
}

// isReset: the server closed with unread input (a bad frame), which TCP
// reports as a reset. A read timeout is not one: a server that does not
// close is a failure.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET)
}
