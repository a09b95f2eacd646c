package adminapi_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/shale-io/shale/adminapi"
)

const wireSharePartitions = `{"node_id":2,"group":"jobs","partitions":[{"topic":"t","partition":1,"start_offset":40,` +
	`"in_flight":12,"acquired":7,"available":3,"lag":9}]}`

// TestDecodeSharePartitions: the wire names of a node's share-partitions,
// and a body without its partitions list refused.
func TestDecodeSharePartitions(t *testing.T) {
	s, err := adminapi.DecodeSharePartitions(strings.NewReader(wireSharePartitions))
	want := adminapi.SharePartition{Topic: "t", Partition: 1, StartOffset: 40, InFlight: 12, Acquired: 7, Available: 3, Lag: 9}
	if err != nil || s.NodeID != 2 || s.Group != "jobs" || len(s.Partitions) != 1 || s.Partitions[0] != want {
		t.Fatalf("DecodeSharePartitions = %+v, %v", s, err)
	}
	if _, err := adminapi.DecodeSharePartitions(strings.NewReader(`{"node_id":2,"group":"jobs"}`)); !errors.Is(err, adminapi.ErrBadBody) {
		t.Fatalf("a body without partitions: %v", err)
	}
}

// FuzzDecodeSharePartitions: any body decodes with a partitions list, or
// is an ErrBadBody.
func FuzzDecodeSharePartitions(f *testing.F) {
	f.Add([]byte(wireSharePartitions))
	f.Add([]byte(`{"partitions":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := adminapi.DecodeSharePartitions(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, adminapi.ErrBadBody) {
				t.Fatalf("error %v does not wrap ErrBadBody", err)
			}
			return
		}
		if s.Partitions == nil {
			t.Fatal("decoded without a partitions list")
		}
	})
}
