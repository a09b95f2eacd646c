package kafka

import (
	"fmt"
	"time"
)

// ServerConfig configures a Server. The zero value of each field means its
// default; see Defaults.
type ServerConfig struct {
	// ListenerName names the listener in ConnInfo and logs. Default
	// "PLAINTEXT".
	ListenerName string `yaml:"listener.name"`
	// MaxRequestBytes is socket.request.max.bytes: a request whose size
	// prefix is larger closes the connection before anything is allocated
	// for it. Default 100 MiB.
	MaxRequestBytes int32 `yaml:"socket.request.max.bytes"`
	// SASLMaxReceiveBytes is sasl.server.max.receive.size: on a SASL
	// listener, a request read before the client has authenticated whose
	// size prefix is larger closes the connection (counted as a failed
	// authentication, as Kafka counts it) before anything is allocated for
	// it. It applies until the connection's first authentication succeeds;
	// MaxRequestBytes applies after (and caps it). Default 524288, Kafka's.
	SASLMaxReceiveBytes int32 `yaml:"sasl.server.max.receive.size"`
	// FailedAuthenticationDelay is connection.failed.authentication.delay.ms:
	// the answer to a failed SASL authentication (bad credentials, an
	// unsupported mechanism, an illegal SASL state) is written this long
	// after the failure, and the connection is closed after it,
	// as Kafka delays it; nothing more is read from the connection
	// meanwhile. It slows down a client that guesses passwords and one
	// that reconnects in a tight loop. Default 100 ms, Kafka's; negative
	// disables it (the answer is written at once).
	FailedAuthenticationDelay time.Duration `yaml:"connection.failed.authentication.delay"`
	// IdleTimeout is connections.max.idle.ms: a connection with no request
	// in flight that sends nothing for this long is closed. Default 10
	// minutes; negative disables it.
	IdleTimeout time.Duration `yaml:"connections.max.idle"`
	// ReadAhead is how many decoded requests a connection may hold ahead of
	// its handler (pipelining), and how many replies ahead of its writer.
	// It bounds a connection's memory to about 2*ReadAhead*MaxRequestBytes
	// in the worst case. Default 8.
	ReadAhead int `yaml:"read.ahead"`
	// Observer, when set, is told about every request the server has
	// answered or failed (request metrics). When it also implements
	// StageObserver it gets each request's stage breakdown instead of the
	// total alone. Optional.
	Observer RequestObserver `yaml:"-"`
	// SlowRequestThreshold is request_log_slow_threshold: a request whose
	// total time (RequestStages.Total) exceeds it logs one Info line with
	// its API, version, correlation id, client id and stage breakdown in
	// milliseconds, at most slowLogBurst lines per second per Server (the
	// lines held back are counted in the next line). Zero, the default,
	// disables the log; negative is invalid.
	SlowRequestThreshold time.Duration `yaml:"request.log.slow.threshold"`
	// AuthObserver, when set, is told every SASL authentication's outcome
	// and every connection closed because its session expired (metrics).
	// Optional.
	AuthObserver AuthObserver `yaml:"-"`
	// Connections, when set, limits the connections the server accepts
	// (max.connections, max.connections.per.ip and its overrides); a
	// connection over a limit is closed at accept with a rate-limited log
	// line. Nil: no limit.
	Connections *ConnectionLimits `yaml:"-"`
	// ConnObserver, when set, is told of every connection opened, closed
	// and refused (metrics). Optional.
	ConnObserver ConnObserver `yaml:"-"`
	// RequestQuota, when set, is told each request's handler time and may
	// throttle the client for it (request_percentage, KIP-124). Optional.
	RequestQuota RequestQuota `yaml:"-"`
}

// RequestObserver receives one observation per request: its API key and
// version, the time from the moment the request was read to the moment its
// reply was written (Kafka's TotalTimeMs; for an acks=0 produce, until the
// handler returned) and the error that closed the connection instead, if
// any. Requests dropped unanswered because the connection closed earlier are
// not reported. It must be safe for concurrent use and quick: it runs on
// the connections' goroutines.
type RequestObserver interface {
	ObserveRequest(key, version int16, d time.Duration, err error)
}

// StageObserver is a RequestObserver that also takes each request's stage
// breakdown (Kafka's RequestChannel metrics). When ServerConfig.Observer
// implements it, the server calls ObserveStages, and not ObserveRequest,
// once per request, with the same rules as ObserveRequest; st.Total is
// ObserveRequest's d.
//
// req is the request observed, so that an observer can name it by more
// than its key (Kafka reports a follower's Fetch apart from a consumer's).
// It is valid only during the call: the observer must neither keep nor
// modify it or anything it references. Its Msg is nil for a request
// answered at decode time (UNSUPPORTED_VERSION).
type StageObserver interface {
	RequestObserver
	ObserveStages(req *Request, st RequestStages, err error)
}

// RequestStages is where one request's time went, Kafka's RequestChannel
// breakdown. The five stages are each >= 0 and add up to Total exactly.
// They are consecutive but for Remote, which also takes the waits a handler
// reported from the middle of Local:
//
//   - RequestQueue (RequestQueueTimeMs): from the request being read and
//     decoded to its handler starting: the time it waited behind earlier
//     requests of its connection in the dispatcher's queue.
//   - Local (LocalTimeMs): the handler's own run, from its call to its
//     return, less the waits it reported with Request.Waited.
//   - Remote (RemoteTimeMs): the waits the handler reported with
//     Request.Waited (a Fetch long-polling for min_bytes up to max_wait_ms,
//     or waiting for remote segments), plus the time the writer spent
//     blocked in Reply.Wait (an acks=all produce waiting for the high
//     watermark). Zero for a handler that reported no wait and a reply
//     without Wait. The part of a replication wait that passed while the
//     reply was queued behind earlier replies is ResponseQueue, not Remote.
//   - ResponseQueue (ResponseQueueTimeMs): from the handler's return to the
//     writer taking the reply up: the time it waited behind earlier replies
//     of its connection. For a Wait reply it ends when Wait is called, and
//     so also covers the flush of the earlier replies before the call.
//   - ResponseSend (ResponseSendTimeMs): from the writer taking the reply up
//     (for a Wait reply: from Wait's return) to its last byte being written:
//     encoding, writing and, for a Body, its WriteTo (a fetch's sendfile).
//     "Written" is to the socket, or into the connection's write buffer when
//     further replies are queued behind it (they are flushed together).
//
// A request whose handler failed ends when the handler returns: it has
// RequestQueue, Local and the handler's reported waits in Remote only. An
// early reply (UNSUPPORTED_VERSION) has no handler and a zero Local.
type RequestStages struct {
	RequestQueue  time.Duration
	Local         time.Duration
	Remote        time.Duration
	ResponseQueue time.Duration
	ResponseSend  time.Duration
	// Total is from the request being read to its reply being written
	// (Kafka's TotalTimeMs), the sum of the stages.
	Total time.Duration
}

const (
	defaultListenerName    = "PLAINTEXT"
	defaultMaxRequestBytes = 100 << 20
	// defaultSASLMaxReceiveBytes is Kafka's
	// BrokerSecurityConfigs.DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE.
	defaultSASLMaxReceiveBytes = 524288
	// defaultFailedAuthenticationDelay is Kafka's
	// connection.failed.authentication.delay.ms default.
	defaultFailedAuthenticationDelay = 100 * time.Millisecond
	defaultIdleTimeout               = 10 * time.Minute
	defaultReadAhead                 = 8
	// defaultHandshakeTimeout bounds a TLS handshake, so that a client that
	// connects and sends nothing holds its connection no longer.
	defaultHandshakeTimeout = 10 * time.Second
)

// Defaults returns c with every zero field set to its default.
func (c ServerConfig) Defaults() ServerConfig {
	if c.ListenerName == "" {
		c.ListenerName = defaultListenerName
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = defaultMaxRequestBytes
	}
	if c.SASLMaxReceiveBytes == 0 {
		c.SASLMaxReceiveBytes = defaultSASLMaxReceiveBytes
	}
	if c.FailedAuthenticationDelay == 0 {
		c.FailedAuthenticationDelay = defaultFailedAuthenticationDelay
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = defaultIdleTimeout
	}
	if c.ReadAhead == 0 {
		c.ReadAhead = defaultReadAhead
	}
	return c
}

// Validate reports a configuration the server cannot run with.
func (c ServerConfig) Validate() error {
	if c.MaxRequestBytes < minFrameSize {
		return fmt.Errorf("kafka: socket.request.max.bytes %d is below %d", c.MaxRequestBytes, minFrameSize)
	}
	if c.SASLMaxReceiveBytes < minFrameSize {
		return fmt.Errorf("kafka: sasl.server.max.receive.size %d is below %d", c.SASLMaxReceiveBytes, minFrameSize)
	}
	if c.ReadAhead < 1 {
		return fmt.Errorf("kafka: read.ahead %d is below 1", c.ReadAhead)
	}
	if l := c.Connections; l != nil {
		if l.MaxConnections < 0 || l.MaxConnectionsPerIP < 0 {
			return fmt.Errorf("kafka: max.connections %d and max.connections.per.ip %d must not be negative", l.MaxConnections, l.MaxConnectionsPerIP)
		}
		for a, n := range l.MaxConnectionsPerIPOverrides {
			if n < 0 {
				return fmt.Errorf("kafka: max.connections.per.ip.overrides: %s:%d is negative", a, n)
			}
		}
	}
	if c.SlowRequestThreshold < 0 {
		return fmt.Errorf("kafka: request.log.slow.threshold %v is negative", c.SlowRequestThreshold)
	}
	return nil
}
