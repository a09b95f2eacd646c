package ingest

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
	// answered or failed (request metrics). Optional.
	Observer RequestObserver `yaml:"-"`
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

const (
	defaultListenerName    = "PLAINTEXT"
	defaultMaxRequestBytes = 100 << 20
	defaultIdleTimeout     = 10 * time.Minute
	defaultReadAhead       = 8
)

// Defaults returns c with every zero field set to its default.
func (c ServerConfig) Defaults() ServerConfig {
	if c.ListenerName == "" {
		c.ListenerName = defaultListenerName
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = defaultMaxRequestBytes
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
		return fmt.Errorf("ingest: socket.request.max.bytes %d is below %d", c.MaxRequestBytes, minFrameSize)
	}
	if c.ReadAhead < 1 {
		return fmt.Errorf("ingest: read.ahead %d is below 1", c.ReadAhead)
	}
	return nil
}
