package adminapi_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/shale-io/shale/adminapi"
)

// The JSON of both endpoints as deployed nodes send it (TestWireFormat),
// also the fuzz targets' seeds.
const (
	wireTier = `{"node_id":1,"partitions":[{"topic":"events","partition":3,"log_start_offset":0,` +
		`"local_log_start_offset":500,"high_watermark":900,"last_tiered_offset":-1,"remote_segments":6,` +
		`"remote_bytes":123456,"upload_lag_segments":1,"upload_lag_bytes":4096,"upload_lag_offsets":300}]}`
	wireReplication = `{"node_id":2,"partitions":[` +
		`{"topic":"a","partition":0,"role":"leader","leader_epoch":4,"leader":2,"log_start_offset":1,` +
		`"local_log_start_offset":2,"log_end_offset":9,"high_watermark":8,"replicas":[2,3],"isr":[2],` +
		`"under_replicated":true,"followers":[{"id":3,"log_end_offset":-1,"lag_records":-1,"in_isr":false,` +
		`"last_fetch_ms_ago":-1,"last_caught_up_ms_ago":-1}],"fetching_from":-1,"fetcher_index":-1},` +
		`{"topic":"b","partition":1,"role":"follower","leader_epoch":0,"leader":-1,"log_start_offset":0,` +
		`"local_log_start_offset":0,"log_end_offset":0,"high_watermark":0,"replicas":[],"isr":[],` +
		`"under_replicated":false,"fetching_from":5,"fetcher_index":1}],` +
		`"fetchers":[{"leader":5,"index":1,"partitions":["b-1"],"fetches":7,"max_wait_ms":500,"min_bytes":1,` +
		`"max_bytes":10,"partition_max_bytes":2},{"leader":6,"index":0,"partitions":["b-2"],"fetches":0,` +
		`"max_wait_ms":0,"min_bytes":0,"max_bytes":0,"partition_max_bytes":0,"consecutive_failures":3,` +
		`"error":"inter-broker SASL authentication failed"}]}`
)

// TestWireFormat pins the JSON of both endpoints, field by field: these
// strings are what deployed nodes send and clients read.
func TestWireFormat(t *testing.T) {
	tier := adminapi.TierStatus{NodeID: 1, Partitions: []adminapi.TierPartitionStatus{{Topic: "events", Partition: 3,
		LogStartOffset: 0, LocalLogStartOffset: 500, HighWatermark: 900, LastTieredOffset: -1, RemoteSegments: 6,
		RemoteBytes: 123456, UploadLagSegments: 1, UploadLagBytes: 4096, UploadLagOffsets: 300}}}
	checkJSON(t, tier, wireTier)
	if got, err := adminapi.DecodeTierStatus(strings.NewReader(wireTier)); err != nil || !reflect.DeepEqual(got, tier) {
		t.Fatalf("decoded tier status %+v %v", got, err)
	}

	repl := adminapi.ReplicationStatus{NodeID: 2,
		Partitions: []adminapi.PartitionReplicationStatus{
			{Topic: "a", Partition: 0, Role: adminapi.RoleLeader, LeaderEpoch: 4, Leader: 2, LogStartOffset: 1,
				LocalLogStartOffset: 2, LogEndOffset: 9, HighWatermark: 8, Replicas: []int32{2, 3}, ISR: []int32{2},
				UnderReplicated: true, Followers: []adminapi.FollowerReplicationStatus{{ID: 3, LogEndOffset: -1,
					LagRecords: -1, LastFetchMsAgo: -1, LastCaughtUpMsAgo: -1}}, FetchingFrom: -1, FetcherIndex: -1},
			{Topic: "b", Partition: 1, Role: adminapi.RoleFollower, Leader: -1, Replicas: []int32{}, ISR: []int32{},
				FetchingFrom: 5, FetcherIndex: 1},
		},
		Fetchers: []adminapi.FetcherReplicationStatus{{Leader: 5, Index: 1, Partitions: []string{"b-1"}, Fetches: 7,
			MaxWaitMs: 500, MinBytes: 1, MaxBytes: 10, PartitionMaxBytes: 2},
			{Leader: 6, Partitions: []string{"b-2"}, ConsecutiveFailures: 3, Error: "inter-broker SASL authentication failed"}},
	}
	checkJSON(t, repl, wireReplication)
	if got, err := adminapi.DecodeReplicationStatus(strings.NewReader(wireReplication)); err != nil || !reflect.DeepEqual(got, repl) {
		t.Fatalf("decoded replication status %+v %v", got, err)
	}
}

// checkJSON asserts that v encodes to want.
func checkJSON(t *testing.T, v any, want string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Fatalf("JSON of %T\n got %s\nwant %s", v, b, want)
	}
}
