package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/interbroker"
)

// fetchConn is a replica fetcher's own connection to the leader for its
// Fetch requests, the hot path of replication: one request at a time,
// written and read on the fetcher's goroutine, into a response buffer that
// is reused from one round to the next. A general client (kgo) reads every
// response into a fresh, zeroed buffer and hands it between goroutines;
// at high produce rates those large allocations were the followers' largest
// CPU cost. The rarer requests (OffsetForLeaderEpoch, ListOffsets) still go
// through the fetcher's kgo client.
//
// Not safe for concurrent use. A response returned by Fetch aliases the
// buffer: it is valid until the next call.
type fetchConn struct {
	addr     string
	clientID string
	dialer   *interbroker.Dialer
	fmt      *kmsg.RequestFormatter

	nc      net.Conn
	expires time.Time // the SASL session's end, zero for none: dial again before
	corr    int32
	wbuf    []byte
	rbuf    []byte
}

// fetchVersion is the Fetch version followers send: the highest Shale serves
// (it carries LastFetchedEpoch).
const fetchVersion = 12

// maxFetchResponse bounds a response's size prefix: a corrupt one must not
// allocate gigabytes.
const maxFetchResponse = 1 << 30

var errFetchResponse = errors.New("replica fetch: malformed response")

// newFetchConn returns the connection to addr that d dials (TLS and SASL
// as the inter-broker listener needs), at the first Fetch.
func newFetchConn(d *interbroker.Dialer, addr, clientID string) *fetchConn {
	return &fetchConn{addr: addr, clientID: clientID, dialer: d, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}
}

// Fetch sends req (as version fetchVersion) and reads its response. Any
// failure closes the connection; the next call dials again. ctx bounds the
// whole exchange.
func (c *fetchConn) Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	resp, err := c.fetch(ctx, req)
	if err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return resp, err
}

func (c *fetchConn) fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	if c.nc != nil && !c.expires.IsZero() && time.Now().After(c.expires) {
		c.Close() // the leader ends the SASL session soon (KIP-368): log in again
	}
	if c.nc == nil {
		conn, err := c.dialer.Dial(ctx, c.addr, c.clientID)
		if err != nil {
			return nil, err
		}
		c.nc, c.expires = conn, conn.Expires
	}
	// The leader holds a fetch up to MaxWaitMillis; a reply later than that
	// plus a margin is a dead connection.
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis)*time.Millisecond + 10*time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	nc := c.nc
	nc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	defer stop()

	req.Version = fetchVersion
	c.corr++
	c.wbuf = c.fmt.AppendRequest(c.wbuf[:0], req, c.corr)
	if _, err := c.nc.Write(c.wbuf); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(size[:])))
	if n < 5 || n > maxFetchResponse {
		return nil, fmt.Errorf("%w: size %d", errFetchResponse, n)
	}
	if cap(c.rbuf) < n {
		c.rbuf = make([]byte, n)
	}
	body := c.rbuf[:n]
	if _, err := io.ReadFull(c.nc, body); err != nil {
		return nil, err
	}
	return parseFetchResponse(body, c.corr)
}

// parseFetchResponse decodes a flexible (v12) Fetch response frame body:
// correlation id, the header's tagged fields, then the response, with each
// partition's tagged fields (DivergingEpoch, tag 0, KIP-320: Epoch -1 when
// absent).
func parseFetchResponse(body []byte, corr int32) (*kmsg.FetchResponse, error) {
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		return nil, fmt.Errorf("%w: correlation id %d, want %d", errFetchResponse, got, corr)
	}
	b := body[4:]
	tags, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, fmt.Errorf("%w: header tags", errFetchResponse)
	}
	b = b[n:]
	for range tags {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, fmt.Errorf("%w: header tag", errFetchResponse)
		}
		b = b[n:]
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return nil, fmt.Errorf("%w: header tag size", errFetchResponse)
		}
		b = b[n+int(l):]
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = fetchVersion
	if err := resp.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("%w: %w", errFetchResponse, err)
	}
	return resp, nil
}

// Close closes the connection, if open.
func (c *fetchConn) Close() {
	if c.nc != nil {
		c.nc.Close()
		c.nc = nil
	}
}
