package kafka

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Handler serves one API key. It is called by the connection's dispatcher,
// one request at a time per connection and in arrival order; different
// connections call it concurrently, so a Handler must be safe for concurrent
// use.
//
// ctx is cancelled when the connection closes or the server is forced down.
// A Handler translates expected failures to Kafka error codes in its
// response; a returned error (or a panic) closes the connection with a log
// line, after the replies to earlier requests on it have been written.
type Handler func(ctx context.Context, req *Request) (Reply, error)

// Request is one decoded request.
//
// Msg, and any byte slice inside it (a produce request's records), may alias
// the connection's pooled frame buffer: they are valid until the request's
// reply has been written (after Reply.Wait or Reply.Body has returned). A
// handler that keeps any of it longer must copy it. Strings are copies.
type Request struct {
	Key           int16
	Version       int16
	CorrelationID int32
	// ClientID is the header's client id; a null client id is "".
	ClientID string
	// Msg is the decoded body, of the kmsg type for Key, at Version.
	Msg kmsg.Request
	// Conn describes the connection the request came on. It is shared by
	// all requests of the connection and must not be modified.
	Conn *ConnInfo

	// waited is the sum of the handler's Waited calls.
	waited time.Duration
	// throttle is the largest of the handler's Throttle calls.
	throttle time.Duration
}

// Draining is closed once the server starts a graceful shutdown: the
// requests already read are still answered, so a handler parked waiting
// for data (a Fetch's long poll) should answer with what it has rather
// than hold the shutdown for the rest of its wait. Nil (never closed) for a
// request that came on no server connection.
func (r *Request) Draining() <-chan struct{} {
	if r.Conn == nil {
		return nil
	}
	return r.Conn.draining
}

// Waited reports that the handler spent d of its run waiting for data
// rather than working: a Fetch long-polling until min_bytes are ready or
// max_wait_ms passes, or blocked on reads of remote segments that run on
// other goroutines. The request's stage breakdown (RequestStages) counts
// that time in Remote instead of Local, as Kafka counts a fetch's time in
// its DelayedFetch and DelayedRemoteFetch purgatories as RemoteTimeMs.
//
// Calls add up; d <= 0 is ignored. Call it from the handler's goroutine
// during its run, for time inside that run, each wait once: the
// connection reads the sum when the handler returns (later calls are
// ignored) and moves at most the handler's whole run to Remote. It
// allocates nothing and costs an addition whether or not the server
// measures stages.
func (r *Request) Waited(d time.Duration) {
	if d > 0 {
		r.waited += d
	}
}

// ConnInfo describes one client connection.
type ConnInfo struct {
	// ID is unique among the connections of one Server, starting at 1.
	ID uint64
	// Listener is ServerConfig.ListenerName, for example "PLAINTEXT".
	Listener string
	// Remote is the client's address.
	Remote net.Addr
	// Principal is who the connection proved to be, Kafka's principal
	// string: "User:" and the client certificate's subject on a TLS
	// listener that verified one, else AnonymousPrincipal.
	Principal string
	// TokenAuthenticated is set while the connection's SASL session was
	// authenticated with a delegation token (KIP-48: SCRAM with the
	// tokenauth extension); Principal is then the token's owner. Only the
	// dispatcher goroutine (the handlers) reads it.
	TokenAuthenticated bool
	// TLS is set on a connection of a TLS listener.
	TLS bool

	// draining is the server's closing channel (Request.Draining).
	draining <-chan struct{}

	// software is what the client's ApiVersions v3+ request named itself
	// (KIP-511), nil before; the ApiVersions handler sets it.
	software atomic.Pointer[ClientSoftware]

	// sasl is the authentication state of a SASL listener's connection,
	// nil on other listeners. Only the dispatcher goroutine (the handlers)
	// reads and writes it.
	sasl *saslState
}

// DelegationTokenRequestsAllowed reports whether the connection may create,
// renew, expire or describe delegation tokens, Kafka's allowTokenRequests:
// not on a session authenticated with a token, nor on a PLAINTEXT
// listener, nor on an SSL one whose client proved no identity.
func (c *ConnInfo) DelegationTokenRequestsAllowed() bool {
	switch {
	case c.TokenAuthenticated:
		return false
	case c.sasl != nil:
		return true
	}
	return c.TLS && c.Principal != AnonymousPrincipal
}

// ClientSoftware is a client's name and version of itself, as its
// ApiVersions request (v3+, KIP-511) gives them: "librdkafka" "2.11.1".
type ClientSoftware struct{ Name, Version string }

// Software returns what the client named itself in its last ApiVersions
// request of v3 or later on this connection, zero before one. Safe for
// concurrent use.
func (c *ConnInfo) Software() ClientSoftware {
	if s := c.software.Load(); s != nil {
		return *s
	}
	return ClientSoftware{}
}

// Reply is what a Handler answers. Exactly one of its fields must be set:
//
//   - Response: encoded and written in request order.
//   - NoResponse: nothing is written (an acks=0 produce); later replies keep
//     their order.
//   - Wait: called by the connection's writer, in request order, after the
//     handler has returned and while later requests on the same connection
//     are already being handled (an acks=all produce appends in the handler
//     and waits for replication in Wait). The ctx passed to Wait is cancelled
//     when the connection closes or the server is forced down. An error from
//     Wait closes the connection.
//   - Body: a pre-encoded response body written by the connection's writer,
//     for example with ResponseWriter.SendFile (zero-copy fetch).
//
// A response (from Response or Wait) must carry the request's key and
// version, which the request's ResponseKind provides; Body must be encoded at
// the request's version. The server writes the size, the correlation id and,
// for flexible versions, the response header's tag buffer.
type Reply struct {
	Response   kmsg.Response
	NoResponse bool
	Wait       func(ctx context.Context) (kmsg.Response, error)
	Body       BodyWriter
}

// BodyWriter writes a response body that the server has not encoded itself.
type BodyWriter interface {
	// Len is the exact number of bytes WriteTo writes. It is called once,
	// before WriteTo.
	Len() int
	// WriteTo writes the body. Writing a different number of bytes than
	// Len closes the connection with ErrBodyLength.
	WriteTo(w *ResponseWriter) error
}

// validate reports ErrInvalidReply unless exactly one field is set and a
// Response matches the request.
func (r *Reply) validate(req *Request) error {
	set := 0
	if r.Response != nil {
		set++
	}
	if r.NoResponse {
		set++
	}
	if r.Wait != nil {
		set++
	}
	if r.Body != nil {
		set++
	}
	if set != 1 {
		return fmt.Errorf("%w: %d fields set, want exactly one", ErrInvalidReply, set)
	}
	if r.Response != nil {
		return checkResponse(req.Key, req.Version, r.Response)
	}
	return nil
}

// checkResponse reports ErrInvalidReply if resp cannot answer a request of
// key and version. ApiVersions may answer at v0 (the downgrade of KIP-511).
func checkResponse(key, version int16, resp kmsg.Response) error {
	if resp == nil {
		return fmt.Errorf("%w: nil response", ErrInvalidReply)
	}
	if resp.Key() != key {
		return fmt.Errorf("%w: response key %d for request key %d", ErrInvalidReply, resp.Key(), key)
	}
	if v := resp.GetVersion(); v != version && !(key == apiVersionsKey && v == 0) {
		return fmt.Errorf("%w: %s response v%d for request v%d", ErrInvalidReply, kmsg.NameForKey(key), v, version)
	}
	return nil
}
