package telemetry

// PushTelemetry (key 72), version 0.
//
//   - v0 (KIP-714): the client's metrics as an OTLP MetricsData protobuf
//     (opentelemetry-proto metrics v1), compressed with CompressionType
//     (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd). The node decodes them and
//     exports them on /metrics (export.go).
//
// Checks, in Kafka's order (ClientMetricsManager): a zero or reserved
// ClientInstanceId is INVALID_REQUEST; a push after the client's
// terminating push is INVALID_REQUEST; a push sooner than the push interval
// after the previous one is THROTTLING_QUOTA_EXCEEDED, unless it is the
// first since GetTelemetrySubscriptions (clients jitter their first push)
// or terminating; a SubscriptionId other than the client's current one
// (the subscriptions changed, or another node answered the client) is
// UNKNOWN_SUBSCRIPTION_ID; an unknown compression type
// UNSUPPORTED_COMPRESSION_TYPE; Metrics over TelemetryMaxBytes
// TELEMETRY_TOO_LARGE. Metrics that do not decompress or decode are
// INVALID_RECORD, as Kafka answers when its exporter fails; metrics that
// decompress past MaxDecompressedBytes are TELEMETRY_TOO_LARGE.
//
// It needs no ACL, as in Kafka.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/segment/batch"
)

func ms(n int32) time.Duration { return time.Duration(n) * time.Millisecond }

func (m *Manager) handlePushTelemetry(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.PushTelemetryRequest)
	resp := r.ResponseKind().(*kmsg.PushTelemetryResponse)
	resp.ErrorCode = m.push(r, req, m.cfg.Now())
	return kafka.Reply{Response: resp}, nil
}

// push checks and exports one push, and returns its error code.
func (m *Manager) push(r *kmsg.PushTelemetryRequest, req *kafka.Request, now time.Time) (code int16) {
	if r.ClientInstanceID == ([16]byte{}) || r.ClientInstanceID == ([16]byte{15: 1}) {
		m.mu.Lock()
		m.pushResult(kerr.InvalidRequest.Code)
		m.mu.Unlock()
		return kerr.InvalidRequest.Code
	}
	m.mu.Lock()
	m.gc(now)
	c := m.clientFor(r.ClientInstanceID, req, now)
	code = m.checkPush(c, r, now)
	if c.terminating || r.Terminating {
		c.terminating = true
	}
	if code != 0 {
		c.lastErr = code
		m.pushResult(code)
		m.mu.Unlock()
		return code
	}
	m.mu.Unlock()

	// Decode outside the lock: it is the costly part.
	var pts []point
	var err error
	if len(r.Metrics) > 0 {
		pts, err = decodePush(batch.Codec(r.CompressionType), r.Metrics, m.cfg.MaxDecompressedBytes)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case errors.Is(err, batch.ErrTooLarge):
		code = kerr.TelemetryTooLarge.Code
	case err != nil:
		code = kerr.InvalidRecord.Code
	}
	if code != 0 {
		m.cfg.Logger.Debug("PushTelemetry: undecodable metrics", "client_instance_id", c.labels[0], "client_id", req.ClientID, "err", err)
		c.lastErr = code
		m.pushResult(code)
		return code
	}
	if m.mu.clients[c.id] == c { // not evicted meanwhile
		m.export(c, pts)
	}
	c.lastErr = 0
	m.pushResult(0)
	return 0
}

// checkPush is Kafka's validatePushRequest; on success it records the
// push's time. REQUIRES: m.mu held.
func (m *Manager) checkPush(c *client, r *kmsg.PushTelemetryRequest, now time.Time) int16 {
	if c.terminating {
		return kerr.InvalidRequest.Code
	}
	firstSinceGet := c.lastGet.After(c.lastPush)
	if !firstSinceGet && !c.lastPush.IsZero() && now.Sub(c.lastPush) < ms(c.sub.IntervalMs) && !r.Terminating {
		return kerr.ThrottlingQuotaExceeded.Code
	}
	c.lastPush = now
	if r.SubscriptionID != c.subscriptionID {
		return kerr.UnknownSubscriptionID.Code
	}
	switch r.CompressionType {
	case 0, 1, 2, 3, 4:
	default:
		return kerr.UnsupportedCompressionType.Code
	}
	if len(r.Metrics) > int(m.cfg.TelemetryMaxBytes) {
		return kerr.TelemetryTooLarge.Code
	}
	return 0
}
