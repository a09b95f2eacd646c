package compat

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
)

// numPartitions is the partition count of every produce/consume topic.
const numPartitions = 3

// codecs are the compression codecs every client is asked to produce with.
var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// header is a client-neutral record header.
type header struct {
	Key   string
	Value []byte
}

// record is a client-neutral record. A nil Key or Value stands for a Kafka
// null; an empty non-nil slice for a zero-length byte string.
type record struct {
	Partition int32
	Offset    int64 // -1 when the producing client did not report it
	Key       []byte
	Value     []byte
	Headers   []header
	// ProducerID is the batch's producer id as franz-go reports it (-1 for
	// a non-idempotent producer); only franzConsume fills it.
	ProducerID int64
}

func (r record) String() string {
	return fmt.Sprintf("p%d@%d key=%s value(%s) headers=%v", r.Partition, r.Offset, show(r.Key), show(r.Value), r.Headers)
}

func show(b []byte) string {
	switch {
	case b == nil:
		return "null"
	case len(b) > 40:
		return fmt.Sprintf("%d bytes %q...", len(b), b[:40])
	default:
		return fmt.Sprintf("%q", b)
	}
}

// makeRecords returns n records spread round-robin over numPartitions, with
// keys (some null), values of varied sizes (some empty, some null when
// allowNull, a few of several KiB) and one to three headers, one of them the
// sequence number "seq" so a consumed record can be traced back.
func makeRecords(n int, tag string, allowNull bool) []record {
	recs := make([]record, n)
	for i := range recs {
		r := record{Partition: int32(i % numPartitions), Offset: -1}
		if i%23 != 5 {
			r.Key = []byte(fmt.Sprintf("key-%s-%d", tag, i%17))
		}
		switch {
		case i%29 == 3:
			r.Value = []byte{}
		case i%31 == 7 && allowNull:
			r.Value = nil
		case i%37 == 11:
			r.Value = bytes.Repeat([]byte{byte(i), 0, 0xff, 'x'}, 1024+i) // several KiB, not compressible to nothing
		default:
			r.Value = bytes.Repeat([]byte(fmt.Sprintf("%s-%06d|", tag, i)), 1+i%13)
		}
		r.Headers = []header{{Key: "seq", Value: []byte(strconv.Itoa(i))}}
		if i%2 == 0 {
			r.Headers = append(r.Headers, header{Key: "codec", Value: []byte(tag)})
		}
		if i%5 == 0 {
			r.Headers = append(r.Headers, header{Key: "empty", Value: []byte{}})
		}
		recs[i] = r
	}
	return recs
}

// byPartition groups sent records by partition, in send order.
func byPartition(recs []record) [numPartitions][]record {
	var out [numPartitions][]record
	for _, r := range recs {
		out[r.Partition] = append(out[r.Partition], r)
	}
	return out
}

// sameBytes compares with null distinguished from empty when strictNull.
func sameBytes(a, b []byte, strictNull bool) bool {
	if strictNull && (a == nil) != (b == nil) {
		return false
	}
	return bytes.Equal(a, b)
}

// checkPartition asserts that got is exactly want: same length, same order,
// byte-identical keys, values and headers, and the producer-reported offsets
// where want has them. Offsets must be contiguous from the first consumed.
// strictNull says whether the client distinguishes a null from an empty
// value on both sides.
func checkPartition(t *testing.T, p int, want, got []record, strictNull bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("partition %d: consumed %d records, sent %d", p, len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		ok := sameBytes(w.Key, g.Key, strictNull) && sameBytes(w.Value, g.Value, strictNull) && len(w.Headers) == len(g.Headers)
		for j := 0; ok && j < len(w.Headers); j++ {
			ok = w.Headers[j].Key == g.Headers[j].Key && bytes.Equal(w.Headers[j].Value, g.Headers[j].Value)
		}
		if w.Offset >= 0 && w.Offset != g.Offset {
			ok = false
		}
		if g.Partition != int32(p) || g.Offset != got[0].Offset+int64(i) {
			ok = false
		}
		if !ok {
			t.Fatalf("partition %d, record %d differs:\n sent %v\n  got %v", p, i, w, g)
		}
	}
}

// createTopic creates a topic with franz-go's kadm, the client the broker's
// own e2e tests use, so that a client's own admin path is tested separately.
func createTopic(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(proctest.Context(t, 20*time.Second), partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

func (h header) String() string { return h.Key + "=" + show(h.Value) }

// franzConsume reads want[p] records of every partition from the start with
// franz-go, which keeps null and empty apart, as a reference reader for
// clients whose own consumer does not.
func franzConsume(t *testing.T, addr, topic string, want [numPartitions][]record) [numPartitions][]record {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	for p := range numPartitions {
		offsets[int32(p)] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := proctest.Context(t, 30*time.Second)
	var got [numPartitions][]record
	total, n := 0, 0
	for p := range numPartitions {
		total += len(want[p])
	}
	for n < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("franz-go consumed %d of %d records before the deadline", n, total)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("franz-go fetch partition %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			rec := record{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, ProducerID: r.ProducerID}
			for _, h := range r.Headers {
				rec.Headers = append(rec.Headers, header{Key: h.Key, Value: h.Value})
			}
			got[r.Partition] = append(got[r.Partition], rec)
			n++
		})
	}
	return got
}

// checkIdempotent reads the topic again with franz-go and asserts that every
// record is byte-identical there too and was written in a batch that carries
// a producer id, that is, that the client's idempotent producer was in use.
func checkIdempotent(t *testing.T, addr, topic string, want [numPartitions][]record) {
	t.Helper()
	got := franzConsume(t, addr, topic, want)
	for p := range numPartitions {
		checkPartition(t, p, want[p], got[p], true)
		for _, r := range got[p] {
			if r.ProducerID < 0 {
				t.Fatalf("record %v has no producer id: the producer was not idempotent", r)
			}
		}
	}
}
