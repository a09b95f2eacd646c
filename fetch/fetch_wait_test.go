package fetch

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/kafka"
)

// The fetch handler reports its waits for data with kafka.Request.Waited,
// so that the request metrics count them as remote time: tested over a real
// kafka server and TCP connection, with a StageObserver.

// gatedRemote is a memRemote whose reads wait for the test: each Read
// signals entered, then waits for release.
type gatedRemote struct {
	*memRemote
	entered chan struct{}
	release chan struct{}
}

func (g *gatedRemote) Read(ctx context.Context, topic string, p int32, offset int64, maxBytes int, minOne bool) ([]byte, int64, error) {
	g.entered <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, offset, ctx.Err()
	}
	return g.memRemote.Read(ctx, topic, p, offset, maxBytes, minOne)
}

// stageLog is a StageObserver that keeps the stages of each request.
type stageLog struct {
	mu  sync.Mutex
	obs []kafka.RequestStages
}

func (s *stageLog) ObserveRequest(int16, int16, time.Duration, error) {}

func (s *stageLog) ObserveStages(req *kafka.Request, st kafka.RequestStages, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.Key == 1 && err == nil {
		s.obs = append(s.obs, st)
	}
}

// next polls until a Fetch beyond the n seen is observed and returns it.
func (s *stageLog) next(t *testing.T, n int) kafka.RequestStages {
	t.Helper()
	var st kafka.RequestStages
	err := proctest.Poll(20*time.Second, time.Millisecond, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.obs) > n {
			st = s.obs[n]
			return true
		}
		return false
	})
	if err != nil {
		t.Fatalf("waiting for Fetch observation %d: %v", n+1, err)
	}
	return st
}

// sendFetch writes one Fetch v12 from a consumer for topic's partition 0 at
// offset.
func sendFetch(t *testing.T, nc net.Conn, corr int32, topic string, offset int64, maxWait time.Duration) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID = 12, -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(maxWait.Milliseconds()), 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = offset, 64<<10, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if _, err := nc.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("wait-test")).AppendRequest(nil, req, corr)); err != nil {
		t.Fatal(err)
	}
}

// recvFetch reads one Fetch v12 response and returns its one partition.
func recvFetch(t *testing.T, br *bufio.Reader) kmsg.FetchResponseTopicPartition {
	t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(br, size[:]); err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(br, frame); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	if err := resp.ReadFrom(frame[5:]); err != nil { // correlation id, header tags
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("%d topics in the answer", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

// checkSum fails unless st's stages are >= 0 and add up to its total.
func checkSum(t *testing.T, what string, st kafka.RequestStages) {
	t.Helper()
	sum := st.RequestQueue + st.Local + st.Remote + st.ResponseQueue + st.ResponseSend
	if sum != st.Total || st.Local < 0 || st.Remote < 0 {
		t.Errorf("%s: stages %+v add up to %v", what, st, sum)
	}
}

// TestFetchWaitsAreRemoteTime: a cold read's wait for its remote segments
// is in the request's remote time, at least as long as the test held the
// read; a long poll at the end of a partition (min bytes 1, nothing coming)
// has its wait in remote too. The stages add up to the total exactly.
func TestFetchWaitsAreRemoteTime(t *testing.T) {
	cold, mem, _ := tieredReplica(t, "cold", 1000)
	hot, _, _ := tieredReplica(t, "hot", 100)
	remote := &gatedRemote{memRemote: mem, entered: make(chan struct{}, 1), release: make(chan struct{})}
	reg := kafka.NewRegistry()
	RegisterFetch(reg, leaders{"cold-0": cold, "hot-0": hot}, nil, quiet(), WithRemote(remote), WithRemoteMinWait(time.Minute))
	obs := &stageLog{}
	srv := kafka.NewServer(kafka.ServerConfig{Observer: obs}, reg, quiet())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx := proctest.Context(t, 20*time.Second)
		srv.Shutdown(ctx)
	})
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	br := bufio.NewReader(nc)

	sendFetch(t, nc, 1, "cold", 0, 10*time.Millisecond)
	<-remote.entered
	from := time.Now()
	for time.Since(from) < time.Millisecond {
		runtime.Gosched()
	}
	held := time.Since(from)
	close(remote.release)
	if p := recvFetch(t, br); p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Fatalf("cold fetch: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}
	st := obs.next(t, 0)
	checkSum(t, "cold fetch", st)
	if st.Remote < held {
		t.Errorf("cold fetch: remote %v, want >= the %v the test held the remote read (local %v)", st.Remote, held, st.Local)
	}

	sendFetch(t, nc, 2, "hot", hot.HighWatermark(), 50*time.Millisecond)
	if p := recvFetch(t, br); p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
		t.Fatalf("long poll at the end: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}
	st = obs.next(t, 1)
	checkSum(t, "long poll", st)
	if st.Remote <= 0 {
		t.Errorf("long poll: remote %v, local %v; want its wait in remote", st.Remote, st.Local)
	}
}
