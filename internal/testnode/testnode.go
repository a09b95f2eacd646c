// Package testnode starts real Shale nodes for tests: in-process through
// package broker, on 127.0.0.1 with random ports and a temporary data dir.
package testnode

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/testcerts"
)

// Option adjusts a node's config before it starts.
type Option func(*config.Broker)

// WithTopicDefault sets a broker-wide topic config default.
func WithTopicDefault(name, value string) Option {
	return func(c *config.Broker) { c.TopicDefaults[name] = value }
}

// WithS3 makes the node's cold tier the S3 bucket at endpoint (path-style
// addressing, region us-east-1) instead of the filesystem bucket under the
// data dir. Credentials come from the standard AWS chain: the test sets
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (t.Setenv) before Start.
func WithS3(endpoint, bucket string) Option {
	return func(c *config.Broker) {
		c.S3Endpoint, c.S3Bucket, c.S3Region, c.S3PathStyle = endpoint, bucket, "us-east-1", true
	}
}

// WithTiering sets the tiering loop's interval (tiering_interval).
func WithTiering(interval time.Duration) Option {
	return func(c *config.Broker) { c.TieringInterval = interval }
}

// WithOrphanGrace sets how old an unreferenced object must be before the
// reconciler deletes it (remote_orphan_grace).
func WithOrphanGrace(d time.Duration) Option {
	return func(c *config.Broker) { c.OrphanGrace = d }
}

// WithListeners gives the node one listener of each protocol (PLAINTEXT,
// SSL, SASL_PLAINTEXT or SASL_SSL) on 127.0.0.1 with a random port, the
// first of them the inter-broker listener. The SSL and SASL_SSL ones need
// WithTLS; the SASL ones offer the config's sasl_enabled_mechanisms.
func WithListeners(protocols ...string) Option {
	return func(c *config.Broker) {
		ls := make([]string, len(protocols))
		for i, p := range protocols {
			ls[i] = p + "://127.0.0.1:0"
		}
		c.Listeners, c.InterBrokerListenerName = strings.Join(ls, ","), protocols[0]
	}
}

// WithTLS has the node's SSL and SASL_SSL listeners serve certs'
// certificate and key (ssl_certificate_location, ssl_key_location). A
// clientAuth of requested or required (ssl_client_auth) verifies client
// certificates against certs' CA (ssl_ca_location); "" leaves both unset.
func WithTLS(certs testcerts.Files, clientAuth string) Option {
	return func(c *config.Broker) {
		c.SSLCertificateLocation, c.SSLKeyLocation = certs.Cert, certs.Key
		if clientAuth != "" {
			c.SSLCALocation, c.SSLClientAuth = certs.CA, clientAuth
		}
	}
}

// Config returns a loopback config with random ports under dir.
func Config(dir string, opts ...Option) config.Broker {
	c := config.Defaults()
	c.DataDir = dir
	c.Listen = "127.0.0.1:0"
	c.Advertise = ""
	c.AdminListen = "127.0.0.1:0"
	c.NATSListen = "127.0.0.1:-1"
	c.RetentionCheckInterval = 200 * time.Millisecond
	c.FlushCheckInterval = 100 * time.Millisecond
	c.TopicDefaults = map[string]string{}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Logger is quiet unless SHALE_TEST_LOG is set.
func Logger() *slog.Logger {
	if os.Getenv("SHALE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Start starts a node in dir and stops it when the test ends.
func Start(t testing.TB, dir string, opts ...Option) *broker.Node {
	t.Helper()
	return start(t, dir, nil, opts...)
}

func start(t testing.TB, dir string, so []broker.StartOption, opts ...Option) *broker.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return StartConfig(t, ctx, Config(dir, opts...), testLogger(t, "node "+dir), so...)
}

// StartConfig validates cfg, starts a node on it within ctx, logging to
// log, and stops it when the test ends: Start for a test that builds the
// configuration (Config) or reads the node's log itself.
func StartConfig(t testing.TB, ctx context.Context, cfg config.Broker, log *slog.Logger, so ...broker.StartOption) *broker.Node {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	n, err := broker.Start(ctx, cfg, log, so...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n.Close(ctx)
	})
	return n
}
