package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerBadInputHandlers serves Metadata v0-12 and FindCoordinator v1-2,
// and handlers that misbehave on Heartbeat (panic) and LeaveGroup (error,
// or an invalid reply).
func registerBadInputHandlers(reg *Registry) {
	reg.Register(kmsg.Metadata, 0, 12, func(_ context.Context, req *Request) (Reply, error) {
		return Reply{Response: metadataReply(req, "h", 1)}, nil
	})
	reg.Register(kmsg.FindCoordinator, 1, 2, func(_ context.Context, req *Request) (Reply, error) {
		return Reply{Response: req.Msg.ResponseKind()}, nil
	})
	reg.Register(kmsg.Heartbeat, 0, 4, func(context.Context, *Request) (Reply, error) {
		panic("heartbeat handler exploded")
	})
	reg.Register(kmsg.LeaveGroup, 0, 5, func(_ context.Context, req *Request) (Reply, error) {
		switch req.CorrelationID {
		case 1:
			return Reply{}, errors.New("leave group store failed")
		case 2:
			return Reply{NoResponse: true, Response: req.Msg.ResponseKind()}, nil
		case 3:
			resp := req.Msg.ResponseKind()
			resp.SetVersion(req.Version + 1)
			return Reply{Response: resp}, nil
		default:
			return Reply{Wait: func(context.Context) (kmsg.Response, error) { panic("wait exploded") }}, nil
		}
	})
}

// header builds a request frame's size and header with a null client id.
func header(size int32, key, version int16, corr int32) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(size))
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	return binary.BigEndian.AppendUint16(b, 0xffff)
}

func sizeOnly(size uint32) []byte { return binary.BigEndian.AppendUint32(nil, size) }

func versioned[T kmsg.Request](r T, v int16) T { r.SetVersion(v); return r }

// TestBadInputCloses: each kind of bad input closes only its connection,
// with a log line; the replies to requests before it are still written; a
// connection opened before it keeps working.
func TestBadInputCloses(t *testing.T) {
	metadataV0 := func(c *rawClient) []byte { return c.frame(kmsg.NewPtrMetadataRequest(), 40) }
	cases := []struct {
		name  string
		input func(c *rawClient) []byte
		log   []string
	}{
		{"garbage body", func(c *rawClient) []byte {
			// Metadata v0 claiming 1000 topics in a 4-byte body, pipelined
			// after a good request.
			return append(metadataV0(c), append(header(14, 3, 0, 41), 0, 0, 3, 0xe8)...)
		}, []string{"malformed request", "Metadata v0 body"}},
		{"random bytes", func(*rawClient) []byte {
			return append(sizeOnly(16), []byte("\x00\x03\x00\x01\xde\xad\xbe\xef\x7f\xff\x01\x02\x03\x04\x05\x06")...)
		}, []string{"malformed request", "request header"}},
		{"frame shorter than a header", func(*rawClient) []byte { return append(sizeOnly(3), 1, 2, 3) },
			[]string{"invalid request size: 3"}},
		{"2 GiB length", func(*rawClient) []byte { return sizeOnly(1 << 31) }, []string{"invalid request size: -2147483648"}},
		{"2 GiB - 1 length", func(*rawClient) []byte { return sizeOnly(1<<31 - 1) },
			[]string{"larger than socket.request.max.bytes: 2147483647 > 104857600"}},
		{"negative length", func(*rawClient) []byte { return sizeOnly(0xffffffff) }, []string{"invalid request size: -1"}},
		{"unknown key", func(*rawClient) []byte { return header(10, 9999, 0, 5) }, []string{"unknown API key: key 9999"}},
		{"unregistered key", func(c *rawClient) []byte { return c.frame(kmsg.NewPtrSyncGroupRequest(), 5) },
			[]string{"unknown API key: key 14 (SyncGroup)"}},
		{"unsupported version beyond kmsg", func(c *rawClient) []byte {
			return append(metadataV0(c), c.frame(versioned(kmsg.NewPtrMetadataRequest(), 14), 6)...)
		}, []string{"unsupported API version: Metadata v14"}},
		{"unsupported version with error code only in older versions", func(c *rawClient) []byte {
			return c.frame(versioned(kmsg.NewPtrFindCoordinatorRequest(), 4), 6)
		}, []string{"unsupported API version: FindCoordinator v4", "no error code at this version"}},
		{"handler panic", func(c *rawClient) []byte { return c.frame(kmsg.NewPtrHeartbeatRequest(), 7) },
			[]string{"handler panicked: heartbeat handler exploded", "goroutine", "api=Heartbeat"}},
		{"handler error", func(c *rawClient) []byte {
			return append(metadataV0(c), c.frame(kmsg.NewPtrLeaveGroupRequest(), 1)...)
		}, []string{"handler failure", "leave group store failed"}},
		{"reply with two fields", func(c *rawClient) []byte { return c.frame(kmsg.NewPtrLeaveGroupRequest(), 2) },
			[]string{"invalid reply: 2 fields set"}},
		{"reply of another version", func(c *rawClient) []byte { return c.frame(kmsg.NewPtrLeaveGroupRequest(), 3) },
			[]string{"invalid reply: LeaveGroup response v1 for request v0"}},
		{"Wait panic", func(c *rawClient) []byte { return c.frame(kmsg.NewPtrLeaveGroupRequest(), 4) },
			[]string{"write failure", "handler panicked: wait exploded", "goroutine"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, ServerConfig{}, registerBadInputHandlers)
			good := dialRaw(t, ts.addr) // conn=1
			good.roundTrip(1)
			bad := dialRaw(t, ts.addr) // conn=2
			bad.roundTrip(2)           // make sure conn 2 is accepted before the bad input
			in := tc.input(bad)
			pipelined := tc.name == "garbage body" || tc.name == "handler error" ||
				tc.name == "unsupported version beyond kmsg"

			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			bad.write(in)
			if pipelined { // the good request before the bad one is answered
				resp := kmsg.NewPtrMetadataResponse()
				if corr := bad.recv(resp); corr != 40 {
					t.Fatalf("correlation id %d, want 40", corr)
				}
			}
			bad.expectClosed()
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Errorf("server allocated %d bytes for the bad input", grew)
			}
			ts.logs.waitLine(t, append([]string{"conn=2"}, tc.log...)...)

			good.roundTrip(3)
			dialRaw(t, ts.addr).roundTrip(4) // still accepting
		})
	}
}

// TestTruncatedFrame: the client sends part of a frame and half-closes; the
// server logs the short read and closes.
func TestTruncatedFrame(t *testing.T) {
	ts := startServer(t, ServerConfig{}, registerBadInputHandlers)
	good := dialRaw(t, ts.addr)
	good.roundTrip(1)
	bad := dialRaw(t, ts.addr)
	bad.roundTrip(2)
	bad.write(header(100, 3, 0, 9))
	if err := bad.nc.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	bad.expectClosed()
	ts.logs.waitLine(t, "conn=2", "closing connection", "reading 100-byte request: unexpected EOF")
	good.roundTrip(3)
}

// TestUnsupportedVersionAnswered: versions outside the registered range are
// answered with UNSUPPORTED_VERSION where the response can say so, and the
// connection stays usable.
func TestUnsupportedVersionAnswered(t *testing.T) {
	ts := startServer(t, ServerConfig{}, registerBadInputHandlers)
	c := dialRaw(t, ts.addr)

	// ApiVersions above v5: a v0 answer with our ApiVersions range
	// (KIP-511), for a version kmsg cannot decode either.
	for _, v := range []int16{6, 99} {
		corr := int32(v)
		c.send(versioned(kmsg.NewPtrApiVersionsRequest(), v), corr)
		resp := kmsg.NewPtrApiVersionsResponse() // v0, header never flexible
		if got := c.recv(resp); got != corr {
			t.Fatalf("v%d: correlation id %d", v, got)
		}
		if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 1 ||
			resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MinVersion != 0 || resp.ApiKeys[0].MaxVersion != 5 {
			t.Fatalf("v%d: got %+v", v, resp)
		}
	}

	// FindCoordinator v0 is below the registered 1-2; v0 has a top-level
	// error code.
	c.send(versioned(kmsg.NewPtrFindCoordinatorRequest(), 0), 7)
	fc := kmsg.NewPtrFindCoordinatorResponse()
	if got := c.recv(fc); got != 7 || fc.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("FindCoordinator v0: correlation id %d, error %d", got, fc.ErrorCode)
	}
	// Metadata v13 is above the registered 0-12; v13 has a top-level error
	// code (KIP-1102).
	c.send(versioned(kmsg.NewPtrMetadataRequest(), 13), 9)
	md := kmsg.NewPtrMetadataResponse()
	md.Version = 13
	if got := c.recv(md); got != 9 || md.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("Metadata v13: correlation id %d, error %d", got, md.ErrorCode)
	}
	c.roundTrip(10)
}

// TestApiVersionsInvalidSoftwareName: v3+ validates the client software
// name and version, as Kafka does.
func TestApiVersionsInvalidSoftwareName(t *testing.T) {
	ts := startServer(t, ServerConfig{}, nil)
	c := dialRaw(t, ts.addr)
	for i, name := range []string{"", "-bad", "bad name", "ok.name-1"} {
		req := versioned(kmsg.NewPtrApiVersionsRequest(), 3)
		req.ClientSoftwareName, req.ClientSoftwareVersion = name, "1.0"
		c.send(req, int32(i))
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		c.recv(resp)
		want := kerr.InvalidRequest.Code
		if name == "ok.name-1" {
			want = 0
		}
		if resp.ErrorCode != want {
			t.Errorf("name %q: error %d, want %d", name, resp.ErrorCode, want)
		}
	}
}

func TestRegisterRejectsMisuse(t *testing.T) {
	h := func(context.Context, *Request) (Reply, error) { return Reply{NoResponse: true}, nil }
	for _, tc := range []struct {
		name     string
		key      kmsg.Key
		min, max int16
		h        Handler
	}{
		{"unknown key", 9999, 0, 0, h},
		{"nil handler", kmsg.Metadata, 0, 1, nil},
		{"inverted range", kmsg.Metadata, 2, 1, h},
		{"negative version", kmsg.Metadata, -1, 1, h},
		{"beyond kmsg", kmsg.Metadata, 0, 99, h},
		{"twice", kmsg.ApiVersions, 0, 1, h},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("Register did not panic")
				}
			}()
			NewRegistry().Register(tc.key, tc.min, tc.max, tc.h)
		})
	}
}
