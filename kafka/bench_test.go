package kafka

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkRoundTrip measures one small request/response over loopback,
// one request outstanding at a time:
//
//   - server: an ApiVersions v3 request through the Server (framing, decode,
//     dispatch, encode, ordered writer);
//   - tcp-echo: the peer, a bare TCP server that reads the same request frame
//     and writes the same response bytes with no decoding.
//
// The ratio server/tcp-echo is the framework's overhead over the network
// stack itself.
//
//	go test -run '^$' -bench RoundTrip -benchmem ./kafka
func BenchmarkRoundTrip(b *testing.B) {
	req := versioned(kmsg.NewPtrApiVersionsRequest(), 3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "bench", "1.0"
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 7)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := NewServer(ServerConfig{}, NewRegistry(), nil)
	go s.Serve(ln)
	defer s.Shutdown(context.Background())

	// Capture the server's answer, for the echo peer to send.
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	response := roundTrip(b, nc, br, frame, nil)

	b.Run("server", func(b *testing.B) {
		buf := make([]byte, len(response))
		b.SetBytes(int64(len(frame) + len(response)))
		for b.Loop() {
			roundTrip(b, nc, br, frame, buf)
		}
	})

	b.Run("tcp-echo", func(b *testing.B) {
		eln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer eln.Close()
		go echoPeer(eln, response)
		ec, err := net.Dial("tcp", eln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer ec.Close()
		ebr := bufio.NewReader(ec)
		buf := make([]byte, len(response))
		b.SetBytes(int64(len(frame) + len(response)))
		for b.Loop() {
			roundTrip(b, ec, ebr, frame, buf)
		}
	})
}

// roundTrip writes frame and reads one size-prefixed response into buf (or a
// new slice when buf is nil), returning the whole response frame.
func roundTrip(b *testing.B, nc net.Conn, br *bufio.Reader, frame, buf []byte) []byte {
	if _, err := nc.Write(frame); err != nil {
		b.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(br, size[:]); err != nil {
		b.Fatal(err)
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	if buf == nil {
		buf = make([]byte, 4+n)
	}
	copy(buf, size[:])
	if _, err := io.ReadFull(br, buf[4:4+n]); err != nil {
		b.Fatal(err)
	}
	return buf[:4+n]
}

// echoPeer answers every size-prefixed frame on each connection with
// response, until ln is closed.
func echoPeer(ln net.Listener, response []byte) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer nc.Close()
			br := bufio.NewReader(nc)
			buf := make([]byte, 64<<10)
			var size [4]byte
			for {
				if _, err := io.ReadFull(br, size[:]); err != nil {
					return
				}
				n := int(binary.BigEndian.Uint32(size[:]))
				if n > len(buf) {
					return
				}
				if _, err := io.ReadFull(br, buf[:n]); err != nil {
					return
				}
				if _, err := nc.Write(response); err != nil {
					return
				}
			}
		}()
	}
}
