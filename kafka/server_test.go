package kafka

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
)

// TestKgoClient drives the server with a real franz-go client: its own
// ApiVersions handshake, an explicit ApiVersions request, and a Metadata
// request served by a handler registered in the test.
func TestKgoClient(t *testing.T) {
	var host string
	var port int32
	ts := startServer(t, ServerConfig{}, func(reg *Registry) {
		reg.Register(kmsg.Metadata, 0, 12, func(_ context.Context, req *Request) (Reply, error) {
			return Reply{Response: metadataReply(req, host, port)}, nil
		})
	})
	h, p, _ := net.SplitHostPort(ts.addr)
	pn, _ := strconv.Atoi(p)
	host, port = h, int32(pn)

	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := proctest.Context(t, testTimeout)

	kresp, err := cl.Request(ctx, kmsg.NewPtrApiVersionsRequest())
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	av := kresp.(*kmsg.ApiVersionsResponse)
	if av.ErrorCode != 0 {
		t.Fatalf("ApiVersions error code %d", av.ErrorCode)
	}
	got := map[int16][2]int16{}
	for _, k := range av.ApiKeys {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	want := map[int16][2]int16{18: {0, 5}, 3: {0, 12}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("advertised %v, want %v", got, want)
	}

	kresp, err = cl.Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	md := kresp.(*kmsg.MetadataResponse)
	if len(md.Brokers) != 1 || md.Brokers[0].Host != host || md.Brokers[0].Port != port {
		t.Fatalf("Metadata brokers %+v", md.Brokers)
	}
}

// busyWork burns a request-dependent amount of CPU, so that handlers take
// varying times without sleeping.
func busyWork(n int) {
	sum := sha256.Sum256([]byte{byte(n)})
	for range n * 200 {
		sum = sha256.Sum256(sum[:])
	}
}

// TestPipelining sends 50 requests on one connection before reading any
// answer; handlers take varying times, run one at a time, and the answers
// come back in request order with their correlation ids.
func TestPipelining(t *testing.T) {
	var active, maxActive, calls atomic.Int32
	ts := startServer(t, ServerConfig{}, func(reg *Registry) {
		reg.Register(kmsg.Metadata, 0, 12, func(_ context.Context, req *Request) (Reply, error) {
			n := active.Add(1)
			defer active.Add(-1)
			if n > maxActive.Load() {
				maxActive.Store(n)
			}
			calls.Add(1)
			busyWork(int(req.CorrelationID*7919) % 13)
			resp := metadataReply(req, "h", 1)
			// Echo the request's topic, so that each answer names its request.
			for _, rt := range req.Msg.(*kmsg.MetadataRequest).Topics {
				st := kmsg.NewMetadataResponseTopic()
				st.Topic = rt.Topic
				resp.Topics = append(resp.Topics, st)
			}
			return Reply{Response: resp}, nil
		})
	})
	c := dialRaw(t, ts.addr)
	const n = 50
	var batch []byte
	for i := range n {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = int16(i % 13) // mix flexible (v9+) and classic versions
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("t" + strconv.Itoa(i))
		req.Topics = append(req.Topics, rt)
		batch = append(batch, c.frame(req, int32(1000+i))...)
	}
	c.write(batch)
	for i := range n {
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = int16(i % 13)
		corr := c.recv(resp)
		if corr != int32(1000+i) {
			t.Fatalf("response %d has correlation id %d", i, corr)
		}
		if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "t"+strconv.Itoa(i) {
			t.Fatalf("response %d answers %+v", i, resp.Topics)
		}
	}
	if calls.Load() != n || maxActive.Load() != 1 {
		t.Fatalf("%d handler calls, at most %d at once; want %d, 1", calls.Load(), maxActive.Load(), n)
	}
}

// TestWaitOrder: a handler returns Reply.Wait; later requests are handled
// while the Wait blocks, the Waits finish in reverse order, and the answers
// still go out in request order.
func TestWaitOrder(t *testing.T) {
	const n = 10 // with ReadAhead 8: 1 in the writer, 8 queued, 1 in the dispatcher
	release := make([]chan struct{}, n)
	for i := range release {
		release[i] = make(chan struct{})
	}
	var handled atomic.Int32
	ts := startServer(t, ServerConfig{ReadAhead: 8}, func(reg *Registry) {
		reg.Register(kmsg.Metadata, 0, 12, func(_ context.Context, req *Request) (Reply, error) {
			handled.Add(1)
			i := req.CorrelationID
			return Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
				select {
				case <-release[i]:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return metadataReply(req, "h", int32(i)), nil
			}}, nil
		})
	})
	c := dialRaw(t, ts.addr)
	for i := range n {
		c.send(kmsg.NewPtrMetadataRequest(), int32(i))
	}
	waitFor(t, "all handlers to run while the first Wait blocks", func() bool { return handled.Load() == n })
	for i := n - 1; i >= 0; i-- {
		close(release[i])
	}
	for i := range n {
		resp := kmsg.NewPtrMetadataResponse()
		if corr := c.recv(resp); corr != int32(i) || resp.Brokers[0].Port != int32(i) {
			t.Fatalf("answer %d: correlation id %d, port %d", i, corr, resp.Brokers[0].Port)
		}
	}
}

// TestNoResponseOrder mixes NoResponse, Wait and plain replies: nothing is
// written for NoResponse, and the rest keep request order.
func TestNoResponseOrder(t *testing.T) {
	ts := startServer(t, ServerConfig{}, func(reg *Registry) {
		reg.Register(kmsg.Metadata, 0, 12, func(_ context.Context, req *Request) (Reply, error) {
			switch req.CorrelationID % 3 {
			case 0:
				return Reply{NoResponse: true}, nil
			case 1:
				return Reply{Wait: func(context.Context) (kmsg.Response, error) {
					return metadataReply(req, "wait", 0), nil
				}}, nil
			default:
				return Reply{Response: metadataReply(req, "plain", 0)}, nil
			}
		})
	})
	c := dialRaw(t, ts.addr)
	const n = 30
	for i := range n {
		c.send(kmsg.NewPtrMetadataRequest(), int32(i))
	}
	for i := range n {
		if i%3 == 0 {
			continue
		}
		resp := kmsg.NewPtrMetadataResponse()
		corr := c.recv(resp)
		wantHost := map[int]string{1: "wait", 2: "plain"}[i%3]
		if corr != int32(i) || resp.Brokers[0].Host != wantHost {
			t.Fatalf("got correlation id %d host %q, want %d %q", corr, resp.Brokers[0].Host, i, wantHost)
		}
	}
	c.roundTrip(n) // the next answer is this one: nothing was written for NoResponse
}
