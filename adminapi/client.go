package adminapi

// Client: GET an admin path from a node and decode its body, for the SDK
// and the CLI alike.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

var (
	// ErrHTTPStatus is returned when the node answers with a status other
	// than 200 OK; the error names the URL, the status and the start of
	// the body.
	ErrHTTPStatus = errors.New("adminapi: HTTP status not 200 OK")
	// ErrBadBody is returned when a body is not the endpoint's JSON: not
	// JSON, of the wrong types, longer than MaxBodyBytes, or without what
	// the server always sends (see the types' docs).
	ErrBadBody = errors.New("adminapi: not the expected JSON body")
)

// errNoPartitions: a status body without its partitions list.
var errNoPartitions = errors.New("no partitions list")

// MaxBodyBytes bounds the body read from one node: a longer one is
// ErrBadBody.
const MaxBodyBytes = 64 << 20

// maxErrorBodyBytes bounds the body quoted in an ErrHTTPStatus error.
const maxErrorBodyBytes = 512

// Client GETs admin paths from nodes. The zero value is ready to use: it
// sends with http.DefaultClient, bounded only by the caller's context.
// A Client is safe for concurrent use; its fields must not change while
// calls are running.
type Client struct {
	// HTTP sends the requests; nil means http.DefaultClient.
	HTTP *http.Client
	// Timeout bounds each call (request and body), on top of the context;
	// 0 means the context alone.
	Timeout time.Duration
	// Token, when set, is sent as "Authorization: Bearer <Token>" (a node
	// with admin_auth_tokens_file). For HTTPS, give HTTP a transport with
	// the node's CA (TLSConfig) and use https:// addresses.
	Token string
}

// TLSConfig is the client side of an HTTPS admin listener: the server's
// certificate must chain to the CAs in caFile (the system's roots when
// caFile is ""), and certFile/keyFile, when set, are the client
// certificate (admin_ssl_client_auth).
func TLSConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("adminapi: no certificate in %s", caFile)
		}
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("adminapi: a client certificate needs both its file and its key's")
	}
	if certFile != "" {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg, nil
}

// TierStatus GETs TierStatusPath from node (see URL), restricted to topic
// unless topic is "". Every error names the URL: the transport's (a
// *url.Error, wrapping context.DeadlineExceeded past Timeout), or one
// wrapping ErrHTTPStatus or ErrBadBody.
func (c Client) TierStatus(ctx context.Context, node, topic string) (TierStatus, error) {
	return get[TierStatus](ctx, c, URL(node, TierStatusPath, topic))
}

// ReplicationStatus GETs ReplicationStatusPath from node (see URL), its
// replicas restricted to topic unless topic is "". Errors are as
// TierStatus's.
func (c Client) ReplicationStatus(ctx context.Context, node, topic string) (ReplicationStatus, error) {
	return get[ReplicationStatus](ctx, c, URL(node, ReplicationStatusPath, topic))
}

// NodeHealth GETs HealthPath from node (see URL). Errors are as
// TierStatus's.
func (c Client) NodeHealth(ctx context.Context, node string) (NodeHealth, error) {
	return get[NodeHealth](ctx, c, URL(node, HealthPath, ""))
}

// ConsumerLag GETs ConsumerLagPath from node (see URL). Errors are as
// TierStatus's.
func (c Client) ConsumerLag(ctx context.Context, node string) (ConsumerLag, error) {
	return get[ConsumerLag](ctx, c, URL(node, ConsumerLagPath, ""))
}

// DecodeNodeHealth reads one node's health checks from r (at most
// MaxBodyBytes); anything else is an error wrapping ErrBadBody.
func DecodeNodeHealth(r io.Reader) (NodeHealth, error) { return decode[NodeHealth](r) }

// DecodeConsumerLag reads one consumer-lag sample from r (at most
// MaxBodyBytes); anything else is an error wrapping ErrBadBody.
func DecodeConsumerLag(r io.Reader) (ConsumerLag, error) { return decode[ConsumerLag](r) }

// DecodeTierStatus reads one tier status from r (at most MaxBodyBytes);
// anything else is an error wrapping ErrBadBody, never a panic.
func DecodeTierStatus(r io.Reader) (TierStatus, error) { return decode[TierStatus](r) }

// DecodeReplicationStatus reads one replication status from r (at most
// MaxBodyBytes) and checks its shape (a partitions list, known roles);
// anything else is an error wrapping ErrBadBody, never a panic.
func DecodeReplicationStatus(r io.Reader) (ReplicationStatus, error) {
	return decode[ReplicationStatus](r)
}

// URL returns the URL of path on the admin listener of node, with
// ?topic=T unless topic is "". node is host:port (http is assumed) or a
// URL, whose path, if any, is put before path.
func URL(node, path, topic string) string {
	base, err := url.Parse(node)
	if err != nil || base.Scheme == "" || base.Host == "" {
		base = &url.URL{Scheme: "http", Host: node}
	}
	u := base.JoinPath(path)
	if topic != "" {
		u.RawQuery = url.Values{"topic": {topic}}.Encode()
	}
	return u.String()
}

// body is what an admin endpoint answers: a type with its shape check.
type body interface {
	TierStatus | ReplicationStatus | BalancePlan | DrainState | NodeHealth | ConsumerLag | SharePartitions | Quarantine | RestoreReport | ForkReport
	validate() error
}

// get GETs u and decodes the body as T.
func get[T body](ctx context.Context, c Client, u string) (T, error) {
	return send[T](ctx, c, http.MethodGet, u, nil)
}

// send sends method to u with reqBody as JSON (nil: no body) and decodes
// the answer as T.
func send[T body](ctx context.Context, c Client, method, u string, reqBody any) (T, error) {
	var zero T
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	var rd io.Reader
	if reqBody != nil {
		b, err := json.Marshal(reqBody)
		if err != nil {
			return zero, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return zero, err // a *url.Error, naming the URL
	}
	if reqBody != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return zero, err // a *url.Error, naming the URL
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// The start of the body, on one line (an error page may be HTML).
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
		return zero, fmt.Errorf("%w: %s %s: %s: %s", ErrHTTPStatus, method, u, resp.Status, strings.Join(strings.Fields(string(b)), " "))
	}
	v, err := decode[T](resp.Body)
	if err != nil {
		return zero, fmt.Errorf("%s %s: %w", method, u, err)
	}
	return v, nil
}

// decode reads one T from r, at most MaxBodyBytes, and checks its shape.
func decode[T body](r io.Reader) (T, error) {
	var v, zero T
	if err := json.NewDecoder(io.LimitReader(r, MaxBodyBytes)).Decode(&v); err != nil {
		return zero, fmt.Errorf("%w: %v", ErrBadBody, err)
	}
	if err := v.validate(); err != nil {
		return zero, fmt.Errorf("%w: %v", ErrBadBody, err)
	}
	return v, nil
}
