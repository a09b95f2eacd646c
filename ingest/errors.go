package ingest

import "errors"

// Errors that close a connection. They are logged with the connection's
// remote address and wrapped with detail; compare with errors.Is.
var (
	// ErrServerClosed is returned by Serve after Shutdown has been called.
	ErrServerClosed = errors.New("ingest: server closed")

	// ErrFrameTooLarge: a request's size prefix exceeds
	// ServerConfig.MaxRequestBytes. Nothing is allocated for it.
	ErrFrameTooLarge = errors.New("ingest: request larger than socket.request.max.bytes")

	// ErrFrameSize: a request's size prefix is negative or too small to hold a
	// request header.
	ErrFrameSize = errors.New("ingest: invalid request size")

	// ErrMalformedRequest: the request header or body failed to decode.
	ErrMalformedRequest = errors.New("ingest: malformed request")

	// ErrUnknownAPIKey: no handler is registered for the request's API key.
	ErrUnknownAPIKey = errors.New("ingest: unknown API key")

	// ErrUnsupportedVersion: the request's version is outside the registered
	// range and no UNSUPPORTED_VERSION response can be built for it.
	ErrUnsupportedVersion = errors.New("ingest: unsupported API version")

	// ErrInvalidReply: a handler returned a Reply that the server cannot
	// write (none or several of its fields set, or a response of another key
	// or version than the request).
	ErrInvalidReply = errors.New("ingest: invalid reply")

	// ErrHandlerPanic: a handler, Reply.Wait or BodyWriter panicked.
	ErrHandlerPanic = errors.New("ingest: handler panicked")

	// ErrBodyLength: a BodyWriter wrote a different number of bytes than
	// its Len announced, so the connection's framing is lost.
	ErrBodyLength = errors.New("ingest: body length mismatch")
)
