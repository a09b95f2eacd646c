package controlplane

import (
	"bufio"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// dropProxy relays a NATS client's connection to the server at addr and
// drops the first publication (PUB or HPUB, with its payload) to subject,
// as a request lost on its way: the server never sees it, so no reply
// comes. dropped counts the messages dropped.
func dropProxy(t *testing.T, addr, subject string) (url string, dropped *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	dropped = new(atomic.Int32)
	go func() { // ends when the listener closes
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			t.Cleanup(func() { c.Close(); s.Close() })
			go io.Copy(c, s) // ends with either side
			go relayDropping(c, s, subject, dropped)
		}
	}()
	return "nats://" + ln.Addr().String(), dropped
}

// relayDropping copies the client protocol from c to s line by line,
// leaving out the first publication to subject.
func relayDropping(c, s net.Conn, subject string, dropped *atomic.Int32) {
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		f := strings.Fields(line)
		var payload []byte
		if len(f) >= 3 && (f[0] == "PUB" || f[0] == "HPUB") {
			n, err := strconv.Atoi(f[len(f)-1])
			if err != nil {
				return
			}
			payload = make([]byte, n+2) // and its CRLF
			if _, err := io.ReadFull(r, payload); err != nil {
				return
			}
			if f[1] == subject && dropped.CompareAndSwap(0, 1) {
				continue
			}
		}
		if _, err := s.Write(append([]byte(line), payload...)); err != nil {
			return
		}
	}
}

// TestOpenTriesALostRequestAgain: a request of the store's opening whose
// reply never comes (here the broker registry's creation, dropped on its
// way to the server) is sent again after one request's wait, instead of
// holding the node's start until its registration timeout.
func TestOpenTriesALostRequestAgain(t *testing.T) {
	srv := startNATS(t)
	url, dropped := dropProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"), "$JS.API.STREAM.CREATE.KV_"+BucketBrokers)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := Open(ctx, nc, StoreConfig{Logger: quietLogger(), RequestTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatalf("open with one request lost: %v", err)
	}
	defer st.Close()
	if dropped.Load() != 1 {
		t.Fatalf("%d requests dropped, want 1", dropped.Load())
	}
}
