package telemetry

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/segment/batch"
)

// FuzzPushTelemetry feeds arbitrary Metrics bytes, under every compression
// type, to PushTelemetry: it must answer without panicking, keep within
// its series bound, and leave a page that the Prometheus registry gathers
// without error (names and labels valid, one type per name).
func FuzzPushTelemetry(f *testing.F) {
	good := otlpPayload(f, 1.5, 3, 1)
	f.Add(int8(0), good)
	for _, c := range []batch.Codec{batch.CodecGzip, batch.CodecSnappy, batch.CodecLZ4, batch.CodecZstd} {
		b, err := batch.Compress(c, nil, good)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(int8(c), b)
	}
	f.Add(int8(0), []byte{0x0a, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, codec int8, metrics []byte) {
		m := NewManager(Config{MaxSeriesPerClient: 50, MaxSeries: 60, MaxDecompressedBytes: 1 << 20, Now: func() time.Time { return time.Unix(1, 0) }})
		m.SetSubscription("all", map[string]string{"metrics": "*"})
		r := kmsg.NewPtrPushTelemetryRequest()
		r.ClientInstanceID = [16]byte{1, 2, 3}
		m.mu.Lock()
		r.SubscriptionID = m.clientFor(r.ClientInstanceID, request("fuzz", r), time.Unix(1, 0)).subscriptionID
		m.mu.Unlock()
		r.CompressionType, r.Metrics = codec, metrics
		reply, err := m.handlePushTelemetry(context.Background(), request("fuzz", r))
		if err != nil || reply.Response == nil {
			t.Fatalf("push: %v", err)
		}
		m.mu.Lock()
		if m.mu.series > 60 {
			t.Fatalf("%d series past the bound of 60", m.mu.series)
		}
		m.mu.Unlock()
		reg := prometheus.NewRegistry()
		reg.MustRegister(m.Collectors()...)
		if _, err := reg.Gather(); err != nil {
			t.Fatalf("gather: %v", err)
		}
	})
}
