package coordinator

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// kafkaRules are Kafka 4's defaults and bounds, with a node whose own
// consumer session (10 s) is below the bounds, as a test node's may be.
func kafkaRules() GroupConfigRules {
	return GroupConfigRules{
		Defaults: GroupConfig{ConsumerSessionTimeoutMs: 10000, ConsumerHeartbeatIntervalMs: 5000,
			ShareSessionTimeoutMs: 45000, ShareHeartbeatIntervalMs: 5000, ShareRecordLockDurationMs: 30000,
			ShareDeliveryCountLimit: 5, ShareAutoOffsetReset: "latest", ShareIsolationLevel: "read_uncommitted"},
		Bounds: map[string]Bounds{
			GroupConsumerSessionTimeoutMs: {45000, 60000}, GroupConsumerHeartbeatIntervalMs: {5000, 15000},
			GroupShareSessionTimeoutMs: {45000, 60000}, GroupShareHeartbeatIntervalMs: {5000, 15000},
			GroupShareRecordLockDurationMs: {15000, 60000}, GroupShareDeliveryCountLimit: {2, 10},
		},
	}
}

func TestGroupConfigValidate(t *testing.T) {
	r := kafkaRules()
	for _, tc := range []struct {
		configs map[string]string
		want    string // "" valid, else a part of the message
	}{
		{map[string]string{GroupConsumerSessionTimeoutMs: "50000", GroupConsumerHeartbeatIntervalMs: "7000"}, ""},
		{map[string]string{GroupShareRecordLockDurationMs: "15000", GroupShareDeliveryCountLimit: "10"}, ""},
		{map[string]string{GroupShareAutoOffsetReset: "EARLIEST", GroupShareIsolationLevel: "read_uncommitted"}, ""},
		// The group's heartbeat against the node's session (10 s) is not
		// checked unless the group sets one of the two... and then it is.
		{map[string]string{GroupConsumerHeartbeatIntervalMs: "12000"}, "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"},
		{map[string]string{"group.consumer.session.timeout.ms": "50000"}, "Unknown group config name: group.consumer.session.timeout.ms"},
		{map[string]string{"share.partition.max.record.locks": "200"}, "Unknown group config name"},
		{map[string]string{GroupConsumerSessionTimeoutMs: "abc"}, "Not a number of type INT"},
		{map[string]string{GroupConsumerSessionTimeoutMs: "99999999999"}, "Not a number of type INT"},
		{map[string]string{GroupConsumerSessionTimeoutMs: "0"}, "Value must be at least 1"},
		{map[string]string{GroupShareDeliveryCountLimit: "1"}, "Value must be at least 2"},
		{map[string]string{GroupConsumerSessionTimeoutMs: "44999"}, "greater than or equal to group.consumer.min.session.timeout.ms (45000)"},
		{map[string]string{GroupConsumerSessionTimeoutMs: "60001"}, "less than or equal to group.consumer.max.session.timeout.ms (60000)"},
		{map[string]string{GroupShareRecordLockDurationMs: "14999"}, "group.share.min.record.lock.duration.ms"},
		{map[string]string{GroupShareDeliveryCountLimit: "11"}, "group.share.max.delivery.count.limit"},
		{map[string]string{GroupShareHeartbeatIntervalMs: "4999"}, "group.share.min.heartbeat.interval.ms"},
		{map[string]string{GroupShareSessionTimeoutMs: "45000", GroupShareHeartbeatIntervalMs: "15000"}, ""},
		{map[string]string{GroupShareAutoOffsetReset: "by_duration:PT1H"}, "by_duration is not built"},
		{map[string]string{GroupShareAutoOffsetReset: "none"}, "Invalid value none"},
		{map[string]string{GroupShareIsolationLevel: "read_committed"}, ""},
		{map[string]string{GroupShareIsolationLevel: "READ_COMMITTED"}, "Invalid value READ_COMMITTED"},
		{map[string]string{GroupShareIsolationLevel: "x"}, "Invalid value x"},
	} {
		err := r.Validate(tc.configs)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.configs, err)
		case tc.want != "" && (err == nil || !errors.Is(err, ErrInvalidGroupConfig) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: got %v, want an ErrInvalidGroupConfig with %q", tc.configs, err, tc.want)
		}
	}
}

func TestGroupConfigResolve(t *testing.T) {
	r := kafkaRules()
	if got := r.Resolve("g", nil, nil); got != r.Defaults {
		t.Fatalf("no configs: %+v", got)
	}
	got := r.Resolve("g", map[string]string{
		GroupConsumerSessionTimeoutMs: "50000", GroupConsumerHeartbeatIntervalMs: "7000",
		GroupShareRecordLockDurationMs: "90000", // stored before the bound narrowed: capped
		GroupShareDeliveryCountLimit:   "3", GroupShareAutoOffsetReset: "Earliest",
		GroupShareIsolationLevel: "read_committed",
	}, nil)
	want := r.Defaults
	want.ConsumerSessionTimeoutMs, want.ConsumerHeartbeatIntervalMs = 50000, 7000
	want.ShareRecordLockDurationMs, want.ShareDeliveryCountLimit, want.ShareAutoOffsetReset = 60000, 3, "earliest"
	want.ShareIsolationLevel = "read_committed"
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for _, k := range GroupConfigKeys {
		if want.Value(k.Name) == "" {
			t.Errorf("%s has no value", k.Name)
		}
	}
}

// FuzzGroupConfigs: names and values from a client never panic the
// checks, and a set the checks accept resolves to exactly its values,
// within the bounds.
func FuzzGroupConfigs(f *testing.F) {
	f.Add(GroupConsumerSessionTimeoutMs, "50000", GroupConsumerHeartbeatIntervalMs, "7000")
	f.Add(GroupShareAutoOffsetReset, "earliest", GroupShareIsolationLevel, "read_committed")
	f.Add(GroupShareDeliveryCountLimit, "-1", "x", "")
	f.Add(GroupShareRecordLockDurationMs, " 2147483648", GroupShareHeartbeatIntervalMs, "0x10")
	r := kafkaRules()
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		configs := map[string]string{k1: v1, k2: v2}
		err := r.Validate(configs)
		got := r.Resolve("g", configs, nil)
		if err != nil {
			if !errors.Is(err, ErrInvalidGroupConfig) {
				t.Fatalf("%v: %v is not an ErrInvalidGroupConfig", configs, err)
			}
			return
		}
		for name, v := range configs {
			b, ok := r.Bounds[name]
			if !ok {
				continue
			}
			want, perr := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			resolved, _ := strconv.ParseInt(got.Value(name), 10, 32)
			if perr != nil || resolved != want || int32(resolved) < b.Min || int32(resolved) > b.Max {
				t.Fatalf("%s=%q accepted but resolved to %d (bounds %v)", name, v, resolved, b)
			}
		}
	})
}
