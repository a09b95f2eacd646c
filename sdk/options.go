package sdk

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Option configures a Producer, Consumer or Admin. Options that do not
// concern the component being built are ignored (WithLinger on an Admin),
// so one option list can build all three.
type Option func(*config)

// Compression is a producer codec.
type Compression string

// Codecs, with Kafka's names.
const (
	CompressionNone   Compression = "none"
	CompressionGzip   Compression = "gzip"
	CompressionSnappy Compression = "snappy"
	CompressionLZ4    Compression = "lz4"
	CompressionZstd   Compression = "zstd"
)

// Acks is the producer's acknowledgement level.
type Acks int8

// Acknowledgement levels, Kafka's acks=0, 1 and all.
const (
	AcksNone   Acks = 0
	AcksLeader Acks = 1
	AcksAll    Acks = -1
)

type config struct {
	seeds      []string
	clientID   string
	adminURL   string
	adminToken string
	http       *http.Client
	logger     *slog.Logger
	extra      []kgo.Opt
	tls        *tls.Config
	sasl       *saslConfig
	security   []kgo.Opt // from tls and sasl, made by newConfig

	// producer
	linger          time.Duration
	batchBytes      int32
	bufferBytes     int
	bufferRecords   int
	compression     Compression
	acks            Acks
	idempotent      bool
	deliveryTimeout time.Duration

	// consumer
	group       string
	topics      []string
	assignment  map[string]map[int32]Position
	startAt     Position
	autoCommit  bool
	commitEvery time.Duration
}

func defaults() config {
	return config{
		clientID:      "shale-sdk",
		http:          http.DefaultClient,
		linger:        5 * time.Millisecond,
		batchBytes:    1 << 20,
		bufferBytes:   32 << 20,
		bufferRecords: 100_000,
		compression:   CompressionNone,
		acks:          AcksAll,
		idempotent:    true,
		startAt:       Start(),
		autoCommit:    true,
		commitEvery:   5 * time.Second,
	}
}

func newConfig(opts []Option) (config, error) {
	c := defaults()
	for _, o := range opts {
		o(&c)
	}
	if len(c.seeds) == 0 {
		return c, fmt.Errorf("%w: no seed brokers (WithSeeds)", ErrInvalidOption)
	}
	if c.batchBytes <= 0 || c.bufferBytes <= 0 || c.bufferRecords <= 0 || c.linger < 0 || c.commitEvery <= 0 {
		return c, fmt.Errorf("%w: batch size, buffer memory, buffered records and commit interval must be positive, linger not negative", ErrInvalidOption)
	}
	switch c.compression {
	case CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd:
	default:
		return c, fmt.Errorf("%w: compression %q", ErrInvalidOption, c.compression)
	}
	switch c.acks {
	case AcksNone, AcksLeader, AcksAll:
	default:
		return c, fmt.Errorf("%w: acks %d", ErrInvalidOption, c.acks)
	}
	if c.idempotent && c.acks != AcksAll {
		return c, fmt.Errorf("%w: idempotence needs acks=all (WithIdempotence(false) for acks %d)", ErrInvalidOption, c.acks)
	}
	sec, err := c.securityOpts()
	if err != nil {
		return c, err
	}
	c.security = sec
	return c, nil
}

// clientOpts are the kgo options every component shares.
func (c *config) clientOpts() []kgo.Opt {
	o := []kgo.Opt{kgo.SeedBrokers(c.seeds...), kgo.ClientID(c.clientID)}
	o = append(o, c.security...)
	if c.logger != nil {
		o = append(o, kgo.WithLogger(slogLogger{c.logger}))
	}
	return o
}

// WithSeeds sets the bootstrap brokers, host:port. Required.
func WithSeeds(addrs ...string) Option {
	return func(c *config) { c.seeds = append(c.seeds, addrs...) }
}

// WithClientID sets the Kafka client.id (default shale-sdk).
func WithClientID(id string) Option { return func(c *config) { c.clientID = id } }

// WithAdminURL sets the node's admin HTTP base URL (http://host:9644), for
// Admin.TierStatus.
func WithAdminURL(url string) Option { return func(c *config) { c.adminURL = url } }

// WithAdminToken sends token as "Authorization: Bearer <token>" on the admin
// endpoint calls (a node with admin_auth_tokens_file).
func WithAdminToken(token string) Option { return func(c *config) { c.adminToken = token } }

// WithHTTPClient sets the HTTP client of the admin endpoint calls (default
// http.DefaultClient): for an HTTPS admin listener, one whose transport
// trusts the node's CA (adminapi.TLSConfig), with an https:// WithAdminURL.
func WithHTTPClient(h *http.Client) Option { return func(c *config) { c.http = h } }

// WithLogger logs the client's events to l (default: silent).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithKgoOptions appends raw franz-go options, applied after the SDK's own:
// the escape hatch for what the SDK does not wrap.
func WithKgoOptions(opts ...kgo.Opt) Option {
	return func(c *config) { c.extra = append(c.extra, opts...) }
}

// WithLinger sets how long the producer waits for more records before
// sending a batch that is not full (linger.ms; default 5 ms, 0 sends at
// once).
func WithLinger(d time.Duration) Option { return func(c *config) { c.linger = d } }

// WithBatchSize sets the largest record batch in bytes (batch.size;
// default 1 MiB).
func WithBatchSize(n int32) Option { return func(c *config) { c.batchBytes = n } }

// WithBufferMemory bounds the bytes of records buffered and in flight
// (buffer.memory; default 32 MiB). When it is full, Send blocks and TrySend
// fails with ErrBufferFull.
func WithBufferMemory(n int) Option { return func(c *config) { c.bufferBytes = n } }

// WithMaxBufferedRecords bounds the number of records buffered and in
// flight (default 100000), with the same backpressure as WithBufferMemory.
func WithMaxBufferedRecords(n int) Option { return func(c *config) { c.bufferRecords = n } }

// WithCompression sets the producer's codec (default none).
func WithCompression(codec Compression) Option { return func(c *config) { c.compression = codec } }

// WithAcks sets the acknowledgement level (default AcksAll). Levels other
// than AcksAll need WithIdempotence(false).
func WithAcks(a Acks) Option { return func(c *config) { c.acks = a } }

// WithIdempotence turns the idempotent producer on or off (default on: a
// retried batch is never written twice).
func WithIdempotence(on bool) Option { return func(c *config) { c.idempotent = on } }

// WithDeliveryTimeout fails a record not acknowledged within d
// (delivery.timeout.ms; default: retry until the context ends). As in kgo,
// d counts from the timestamp of the first record of its batch, so records
// with timestamps older than d fail at once: leave it off when writing
// records with historical timestamps.
func WithDeliveryTimeout(d time.Duration) Option { return func(c *config) { c.deliveryTimeout = d } }

// WithGroup makes the consumer a member of consumer group group, consuming
// topics. Partitions are assigned by the group (cooperative-sticky).
func WithGroup(group string, topics ...string) Option {
	return func(c *config) { c.group, c.topics = group, append(c.topics, topics...) }
}

// WithTopics makes the consumer read every partition of topics without a
// group, from WithStartAt.
func WithTopics(topics ...string) Option {
	return func(c *config) { c.topics = append(c.topics, topics...) }
}

// WithAssignment makes the consumer read exactly the given partitions, each
// from its own position, without a group.
func WithAssignment(a map[string]map[int32]Position) Option {
	return func(c *config) {
		if c.assignment == nil {
			c.assignment = map[string]map[int32]Position{}
		}
		for t, ps := range a {
			if c.assignment[t] == nil {
				c.assignment[t] = map[int32]Position{}
			}
			for p, pos := range ps {
				c.assignment[t][p] = pos
			}
		}
	}
}

// WithStartAt sets where a partition without a committed offset (group) or
// explicit position (WithTopics) starts (auto.offset.reset; default Start).
func WithStartAt(p Position) Option { return func(c *config) { c.startAt = p } }

// WithAutoCommit turns the group consumer's periodic commit of polled
// records on or off (default on, every 5 s, and on Close). Off, the
// application calls Commit.
func WithAutoCommit(on bool) Option { return func(c *config) { c.autoCommit = on } }

// WithAutoCommitInterval sets the auto-commit period (default 5 s).
func WithAutoCommitInterval(d time.Duration) Option { return func(c *config) { c.commitEvery = d } }
