package telemetry

// GetTelemetrySubscriptions (key 71), version 0.
//
//   - v0 (KIP-714): a ClientInstanceId of zero gets a new random one;
//     the answer is the client's combined subscription: the metric
//     prefixes of every subscription it matches ("*" when one names all,
//     none when none matches), the smallest push interval among them
//     (Kafka's 5 minute default when none matches), the subscription id
//     (Kafka's CRC32C of both, XORed with the instance id's hash), the
//     compression types accepted (zstd, lz4, gzip, snappy, in Kafka's
//     order of preference) and TelemetryMaxBytes.
//   - DeltaTemporality is false, where Kafka answers true: Prometheus
//     counters are cumulative, so the client sends its running totals and
//     a lost or throttled push loses nothing. A client that sends deltas
//     anyway is summed (export.go).
//   - A second request within the push interval is THROTTLING_QUOTA_EXCEEDED,
//     unless the client's last push was refused UNKNOWN_SUBSCRIPTION_ID or
//     UNSUPPORTED_COMPRESSION_TYPE (it must learn its subscription again),
//     as Kafka means to (its check reads `!=` twice with ||, which is
//     always true). A changed subscription is answered at once.
//
// It needs no ACL: any client may ask, as in Kafka.

import (
	"context"
	"crypto/rand"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/kafka"
)

// acceptedCompression are Kafka's SUPPORTED_COMPRESSION_TYPES, in its
// order: zstd, lz4, gzip, snappy.
var acceptedCompression = []int8{4, 3, 1, 2}

// Register serves GetTelemetrySubscriptions and PushTelemetry from m.
func Register(reg *kafka.Registry, m *Manager) {
	reg.Register(kmsg.GetTelemetrySubscriptions, 0, 0, m.handleGetTelemetrySubscriptions)
	reg.Register(kmsg.PushTelemetry, 0, 0, m.handlePushTelemetry)
}

func (m *Manager) handleGetTelemetrySubscriptions(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := r.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	now := m.cfg.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gc(now)
	id := r.ClientInstanceID
	if id == ([16]byte{}) {
		id = m.newInstanceID()
	}
	before := -1
	if c := m.mu.clients[id]; c != nil {
		before = c.version
	}
	c := m.clientFor(id, req, now)
	changed := before != c.version
	last := c.lastGet
	if c.lastPush.After(last) {
		last = c.lastPush
	}
	interval := ms(c.sub.IntervalMs)
	if !changed && !last.IsZero() && now.Sub(last) < interval &&
		c.lastErr != kerr.UnknownSubscriptionID.Code && c.lastErr != kerr.UnsupportedCompressionType.Code {
		resp.ErrorCode = kerr.ThrottlingQuotaExceeded.Code
		return kafka.Reply{Response: resp}, nil
	}
	c.lastGet, c.lastErr = now, 0
	resp.ClientInstanceID = id
	resp.SubscriptionID = c.subscriptionID
	resp.AcceptedCompressionTypes = acceptedCompression
	resp.PushIntervalMillis = c.sub.IntervalMs
	resp.TelemetryMaxBytes = m.cfg.TelemetryMaxBytes
	resp.DeltaTemporality = false
	resp.RequestedMetrics = append([]string{}, c.sub.Metrics...)
	return kafka.Reply{Response: resp}, nil
}

// newInstanceID is a random version 4 UUID that no client here has, and
// none of Kafka's reserved ids (zero, one). REQUIRES: m.mu held.
func (m *Manager) newInstanceID() [16]byte {
	for {
		var id [16]byte
		_, _ = rand.Read(id[:])
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		if _, taken := m.mu.clients[id]; !taken {
			return id
		}
	}
}
