package kafka

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzRegistry serves every request key kmsg knows over its full version
// range (ApiVersions over the registered v0-v5), so that the fuzzer reaches
// every body decoder.
func fuzzRegistry() *Registry {
	reg := NewRegistry()
	h := func(context.Context, *Request) (Reply, error) { return Reply{NoResponse: true}, nil }
	for key := int16(0); key < 2000; key++ {
		if r := kmsg.RequestForKey(key); r != nil && key != apiVersionsKey {
			reg.Register(kmsg.Key(key), 0, r.MaxVersion(), h)
		}
	}
	return reg
}

// FuzzRequestDecode feeds frames (without the size prefix) to the decoding
// path: header, flexible header tags, and the kmsg body of every registered
// key. Decoding must not panic, must fail only with the package's sentinel
// errors, and must yield a request of the header's key and version that
// encodes again.
func FuzzRequestDecode(f *testing.F) {
	reg := fuzzRegistry()
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	for _, k := range reg.apiKeys() {
		for _, v := range []int16{k.MinVersion, k.MaxVersion, k.MaxVersion + 1} {
			r := kmsg.RequestForKey(k.ApiKey)
			r.SetVersion(v)
			f.Add(fm.AppendRequest(nil, r, 42)[4:])
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0, 3, 0, 12, 0, 0, 0, 1, 0xff, 0xff, 0x05, 0x01, 0xff})

	sentinels := []error{ErrMalformedRequest, ErrUnknownAPIKey, ErrUnsupportedVersion}
	f.Fuzz(func(t *testing.T, frame []byte) {
		d, err := reg.decodeFrame(frame)
		if err != nil {
			for _, s := range sentinels {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error %v is none of the sentinels", err)
		}
		key, version := int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:]))
		if d.req.Key != key || d.req.Version != version || d.req.CorrelationID != int32(binary.BigEndian.Uint32(frame[4:])) {
			t.Fatalf("decoded header %+v from % x", d.req, frame[:8])
		}
		bw := bufio.NewWriter(io.Discard)
		if d.early != nil {
			if d.h != nil || d.req.Msg != nil {
				t.Fatal("early answer with a handler")
			}
			if err := writeResponse(bw, d.req.CorrelationID, d.early); err != nil {
				t.Fatal(err)
			}
			return
		}
		if d.h == nil || d.req.Msg == nil || d.req.Msg.Key() != key || d.req.Msg.GetVersion() != version {
			t.Fatalf("decoded %+v", d)
		}
		d.req.Msg.AppendTo(nil)
		// The request's response kind encodes with its header.
		if err := writeResponse(bw, d.req.CorrelationID, d.req.Msg.ResponseKind()); err != nil {
			t.Fatal(err)
		}
	})
}
