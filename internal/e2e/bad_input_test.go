package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
)

// connEnd is how the node ended a raw connection.
type connEnd struct {
	closed bool   // EOF or reset
	corrID *int32 // correlation id of a response frame, if one came first
}

// readEnd reads from c until the node closes it or a whole response frame
// arrives, for at most d. A timeout is an error: the node held a connection
// open after bad input.
func readEnd(c net.Conn, d time.Duration) (connEnd, error) {
	c.SetReadDeadline(time.Now().Add(d))
	var got []byte
	buf := make([]byte, 4096)
	for {
		if len(got) >= 8 {
			size := int32(binary.BigEndian.Uint32(got))
			if size >= 4 && int(size)+4 <= len(got) {
				id := int32(binary.BigEndian.Uint32(got[4:]))
				return connEnd{corrID: &id}, nil
			}
		}
		k, err := c.Read(buf)
		got = append(got, buf[:k]...)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
				return connEnd{closed: true}, nil
			}
			return connEnd{}, fmt.Errorf("after %d bytes: %w", len(got), err)
		}
	}
}

// frame builds a request frame: size, api key, version, correlation id,
// client id "e2e", then body.
func frame(key, version int16, corrID int32, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corrID))
	b = binary.BigEndian.AppendUint16(b, 3)
	b = append(b, "e2e"...)
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// badInput is one kind of bad input sent on a fresh connection.
type badInput struct {
	name string
	send func(c net.Conn, rng *rand.Rand)
	// check judges how the node ended the connection; nil means any end
	// (including the test closing it) is fine as long as the node survives.
	check func(e connEnd) error
}

func mustClose(e connEnd) error {
	if !e.closed {
		return fmt.Errorf("got a response (correlation id %d), want the connection closed", *e.corrID)
	}
	return nil
}

func closeOrAnswer(corrID int32) func(connEnd) error {
	return func(e connEnd) error {
		if e.closed || *e.corrID == corrID {
			return nil
		}
		return fmt.Errorf("response with correlation id %d, want %d or a closed connection", *e.corrID, corrID)
	}
}

var badInputs = []badInput{
	{
		// Random bytes, then a half-close: the node must not wait forever
		// for the rest of a frame the garbage announced.
		name: "garbage",
		send: func(c net.Conn, rng *rand.Rand) {
			b := make([]byte, 1+rng.IntN(4096))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			c.Write(b)
			c.(*net.TCPConn).CloseWrite()
		},
	},
	{
		// A small, valid size prefix over random bytes: a frame that
		// cannot be decoded (or, rarely, an answerable one).
		name: "garbage frame",
		send: func(c net.Conn, rng *rand.Rand) {
			b := make([]byte, 4+64)
			binary.BigEndian.PutUint32(b, 64)
			for i := 4; i < len(b); i++ {
				b[i] = byte(rng.Uint32())
			}
			binary.BigEndian.PutUint32(b[8:], 777) // correlation id
			c.Write(b)
		},
		check: closeOrAnswer(777),
	},
	{
		name:  "http request",
		send:  func(c net.Conn, _ *rand.Rand) { c.Write([]byte("GET / HTTP/1.1\r\nHost: shale\r\n\r\n")) },
		check: mustClose,
	},
	{
		// Part of a frame, then the client goes away.
		name: "truncated frame",
		send: func(c net.Conn, rng *rand.Rand) {
			f := frame(18, 3, 1, make([]byte, 64)) // ApiVersions v3 with padding
			c.Write(f[:4+rng.IntN(len(f)-5)])
			c.Close()
		},
	},
	{
		name: "2 GiB length prefix",
		send: func(c net.Conn, _ *rand.Rand) {
			c.Write([]byte{0x80, 0, 0, 0})
			c.Write(frame(18, 0, 2, nil)[4:])
		},
		check: mustClose,
	},
	{
		name: "2 GiB - 1 length prefix",
		send: func(c net.Conn, _ *rand.Rand) {
			c.Write([]byte{0x7f, 0xff, 0xff, 0xff})
			c.Write(frame(18, 0, 3, nil)[4:])
		},
		check: mustClose,
	},
	{
		name:  "unknown api key",
		send:  func(c net.Conn, _ *rand.Rand) { c.Write(frame(9999, 0, 4242, []byte{0, 0, 0, 0})) },
		check: closeOrAnswer(4242),
	},
}

// TestBadInput sends bad input on raw connections to the running binary
// while a franz-go client on other connections keeps producing and
// consuming. Every bad connection must be closed (or answered) by the node,
// the client must see no error, and the process must stay up with no panic
// in its stderr.
func TestBadInput(t *testing.T) {
	t.Parallel()
	const topic = "bystander"
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	n := newNode(t, t.TempDir())
	n.Start()
	n.WaitReady()
	createTopic(t, n.Kafka(), topic, 1)

	var rounds atomic.Int64
	trafficErr := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // owned by this test; ends on cancel, error or its bound
		trafficErr <- bystander(ctx, n.Kafka(), topic, &rounds)
	}()
	if err := proctest.WaitFor(30*time.Second, func() bool { return rounds.Load() >= 5 }); err != nil {
		cancel()
		t.Fatalf("bystander client made %d rounds before the bad input: %v", rounds.Load(), <-trafficErr)
	}

	const repeats = 10
	for _, in := range badInputs {
		for i := range repeats {
			c, err := net.DialTimeout("tcp", n.Kafka(), 5*time.Second)
			if err != nil {
				t.Fatalf("%s #%d: dial: %v", in.name, i, err)
			}
			in.send(c, rng)
			if in.check != nil || in.name == "garbage" {
				e, err := readEnd(c, 15*time.Second)
				if err == nil && in.check != nil {
					err = in.check(e)
				}
				if err != nil {
					t.Errorf("%s #%d: %v", in.name, i, err)
				}
			}
			c.Close()
		}
	}
	// The bystander must keep working after the bad input too.
	after := rounds.Load()
	if err := proctest.WaitFor(30*time.Second, func() bool { return rounds.Load() >= after+5 }); err != nil {
		t.Errorf("bystander client stalled at %d rounds after the bad input", rounds.Load())
	}
	cancel()
	if err := <-trafficErr; err != nil {
		t.Fatalf("bystander client: %v", err)
	}
	t.Logf("bystander: %d produce+consume rounds", rounds.Load())

	if !n.Alive() {
		t.Fatalf("shale exited")
	}
	resp, err := http.Get("http://" + n.Admin() + "/healthz")
	if err != nil {
		t.Fatalf("healthz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %s", resp.Status)
	}
	n.CheckNoPanic()
	if os.Getenv("E2E_SHOW_LOG") != "" {
		t.Log(n.Tail())
	}
}

// bystander produces one record at a time and consumes it back on its own
// connections, counting rounds, until ctx ends or it has done 5000 rounds.
// It returns the first error.
func bystander(ctx context.Context, addr, topic string, rounds *atomic.Int64) error {
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return err
	}
	defer prod.Close()
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
	if err != nil {
		return err
	}
	defer cons.Close()
	for i := range 5000 {
		if ctx.Err() != nil {
			return nil
		}
		want := fmt.Sprintf("r-%d", i)
		pctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		r, err := prod.ProduceSync(pctx, &kgo.Record{Value: []byte(want)}).First()
		cancel()
		if err != nil {
			return fmt.Errorf("round %d: produce: %w", i, err)
		}
		if r.Offset != int64(i) {
			return fmt.Errorf("round %d: produced at offset %d", i, r.Offset)
		}
		cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		fs := cons.PollFetches(cctx)
		cancel()
		if err := fs.Err0(); err != nil {
			return fmt.Errorf("round %d: fetch: %w", i, err)
		}
		recs := fs.Records()
		if len(recs) != 1 || string(recs[0].Value) != want || recs[0].Offset != int64(i) {
			return fmt.Errorf("round %d: consumed %d records, want %q at %d", i, len(recs), want, i)
		}
		rounds.Add(1)
	}
	return nil
}
