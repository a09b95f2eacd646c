package kafka

import "errors"

// Errors that close a connection. They are logged with the connection's
// remote address and wrapped with detail; compare with errors.Is.
var (
	// ErrServerClosed is returned by Serve after Shutdown has been called.
	ErrServerClosed = errors.New("kafka: server closed")

	// ErrFrameTooLarge: a request's size prefix exceeds
	// ServerConfig.MaxRequestBytes. Nothing is allocated for it.
	ErrFrameTooLarge = errors.New("kafka: request larger than socket.request.max.bytes")

	// ErrSASLReceiveTooLarge: on a SASL listener, a request read before
	// the client authenticated has a size prefix over
	// ServerConfig.SASLMaxReceiveBytes. Nothing is allocated for it.
	ErrSASLReceiveTooLarge = errors.New("kafka: request before SASL authentication larger than sasl.server.max.receive.size")

	// ErrFrameSize: a request's size prefix is negative or too small to hold a
	// request header.
	ErrFrameSize = errors.New("kafka: invalid request size")

	// ErrMalformedRequest: the request header or body failed to decode.
	ErrMalformedRequest = errors.New("kafka: malformed request")

	// ErrUnknownAPIKey: no handler is registered for the request's API key.
	ErrUnknownAPIKey = errors.New("kafka: unknown API key")

	// ErrUnsupportedVersion: the request's version is outside the registered
	// range and no UNSUPPORTED_VERSION response can be built for it.
	ErrUnsupportedVersion = errors.New("kafka: unsupported API version")

	// ErrInvalidReply: a handler returned a Reply that the server cannot
	// write (none or several of its fields set, or a response of another key
	// or version than the request).
	ErrInvalidReply = errors.New("kafka: invalid reply")

	// ErrHandlerPanic: a handler, Reply.Wait or BodyWriter panicked.
	ErrHandlerPanic = errors.New("kafka: handler panicked")

	// ErrBodyLength: a BodyWriter wrote a different number of bytes than
	// its Len announced, so the connection's framing is lost.
	ErrBodyLength = errors.New("kafka: body length mismatch")
)
