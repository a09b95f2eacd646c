package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestBrokerPrecedence(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "shale.yaml")
	if err := os.WriteFile(path, []byte("listen: 127.0.0.1:1000\nnode_id: 3\nshutdown_timeout: 5s\ntopic_defaults:\n  retention.ms: \"1000\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := Defaults()
	if err := b.LoadFile(path); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SHALE_LISTEN": "127.0.0.1:2000", "SHALE_AUTO_CREATE_TOPICS_ENABLE": "false"}
	if err := b.ApplyEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	flags := BindFlags(fs)
	if err := fs.Parse([]string{"--listen", "127.0.0.1:3000", "--topic-default", "segment.bytes=1048576"}); err != nil {
		t.Fatal(err)
	}
	if err := flags.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	if b.Listen != "127.0.0.1:3000" || b.NodeID != 3 || b.AutoCreateTopics || b.ShutdownTimeout != 5*time.Second {
		t.Fatalf("precedence wrong: %+v", b)
	}
	if b.Advertise != b.Listen {
		t.Fatalf("advertise %q", b.Advertise)
	}
	if b.TopicDefaults["retention.ms"] != "1000" || b.TopicDefaults["segment.bytes"] != "1048576" {
		t.Fatalf("topic defaults %v", b.TopicDefaults)
	}
}

// TestBoolFlags: every boolean setting is a bare flag that also takes
// =false, and the flags win over the environment whatever the order they
// were read in; a bad value is a parse error.
func TestBoolFlags(t *testing.T) {
	var bools []string
	d := Defaults()
	d.fields(func(name, _ string, v reflect.Value) {
		if v.Kind() == reflect.Bool {
			bools = append(bools, name)
		}
	})
	if len(bools) < 3 {
		t.Fatalf("bool settings %v", bools)
	}
	for _, name := range bools {
		for _, c := range []struct {
			args []string
			want bool
		}{
			{[]string{"--" + FlagName(name)}, true},
			{[]string{"--" + FlagName(name) + "=true"}, true},
			{[]string{"--" + FlagName(name) + "=false"}, false},
		} {
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			flags := BindFlags(fs)
			if err := fs.Parse(append(c.args, "--listen", "127.0.0.1:1")); err != nil {
				t.Fatalf("%v: %v", c.args, err)
			}
			b := Defaults()
			env := map[string]string{EnvName(name): fmt.Sprint(!c.want)}
			if err := b.ApplyEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
				t.Fatal(err)
			}
			if err := flags.Apply(&b); err != nil {
				t.Fatal(err)
			}
			var got bool
			b.fields(func(n, _ string, v reflect.Value) {
				if n == name {
					got = v.Bool()
				}
			})
			if got != c.want || b.Listen != "127.0.0.1:1" {
				t.Errorf("%v over %v: %s = %v, listen %s", c.args, env, name, got, b.Listen)
			}
		}
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	BindFlags(fs)
	for _, bad := range [][]string{{"--s3-path-style=maybe"}, {"--shutdown-timeout", "soon"}, {"--node-id", "x"}, {"--topic-default", "novalue"}} {
		if err := fs.Parse(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestBrokerRejects(t *testing.T) {
	for name, mut := range map[string]func(*Broker){
		"listen":              func(b *Broker) { b.Listen = "nope" },
		"partitions":          func(b *Broker) { b.NumPartitions = 0 },
		"format":              func(b *Broker) { b.LogFormat = "xml" },
		"topic default":       func(b *Broker) { b.TopicDefaults = map[string]string{"retention.ms": "soon"} },
		"unknown topic":       func(b *Broker) { b.TopicDefaults = map[string]string{"no.such": "1"} },
		"fetchers":            func(b *Broker) { b.NumReplicaFetchers = 0 },
		"fetch bytes":         func(b *Broker) { b.ReplicaFetchResponseMaxBytes = 0 },
		"fetch wait":          func(b *Broker) { b.ReplicaFetchWaitMax = b.ReplicaLagTimeMax },
		"writeback":           func(b *Broker) { b.LogWritebackBytes = -1 },
		"lag sample -":        func(b *Broker) { b.ConsumerLagSampleInterval = -time.Second },
		"lag sample ms":       func(b *Broker) { b.ConsumerLagSampleInterval = time.Millisecond },
		"imbalance %":         func(b *Broker) { b.LeaderImbalancePerBrokerPercentage = 101 },
		"imbalance -%":        func(b *Broker) { b.LeaderImbalancePerBrokerPercentage = -1 },
		"check every":         func(b *Broker) { b.LeaderImbalanceCheckInterval = 0 },
		"balancer moves 0":    func(b *Broker) { b.BalancerMaxMoves = 0 },
		"balancer moves 1001": func(b *Broker) { b.BalancerMaxMoves = 1001 },
		"balancer skew 0":     func(b *Broker) { b.BalancerReplicaSkew = 0 },
		"balancer every 10ms": func(b *Broker) { b.BalancerInterval = 10 * time.Millisecond },
		"replica selector":    func(b *Broker) { b.ReplicaSelectorClass = "org.example.MySelector" },
	} {
		b := Defaults()
		mut(&b)
		if err := b.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	path := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(path, []byte("lisen: x\n"), 0o644)
	b := Defaults()
	if err := b.LoadFile(path); err == nil {
		t.Error("unknown yaml key accepted")
	}
}

func TestTopicResolve(t *testing.T) {
	tc := ResolveTopic(map[string]string{"retention.ms": "5"}, map[string]string{"retention.ms": "7", "segment.bytes": "100"})
	if v, src, _ := tc.Get("retention.ms"); v != "5" || src != SourceTopic {
		t.Fatalf("retention.ms %s %d", v, src)
	}
	if v, src, _ := tc.Get("segment.bytes"); v != "100" || src != SourceBroker {
		t.Fatalf("segment.bytes %s %d", v, src)
	}
	if v, src, _ := tc.Get("cleanup.policy"); v != "delete" || src != SourceDefault {
		t.Fatalf("cleanup.policy %s %d", v, src)
	}
	if tc.LocalRetentionMs() != 5 {
		t.Fatalf("local retention follows retention.ms: %d", tc.LocalRetentionMs())
	}
	if tc.Millis(FlushMs) <= 0 {
		t.Fatal("flush.ms max must saturate, not overflow")
	}
}

func TestValidateTopicValue(t *testing.T) {
	good := map[string]string{"retention.ms": "-1", "compression.type": "zstd", "unclean.leader.election.enable": "true", "min.cleanable.dirty.ratio": "0.3"}
	for k, v := range good {
		if err := ValidateTopicValue(k, v); err != nil {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
	bad := map[string]string{"retention.ms": "-3", "compression.type": "brotli", "segment.bytes": "99999999999", "min.insync.replicas": "0", "message.timestamp.type": "Now"}
	for k, v := range bad {
		if err := ValidateTopicValue(k, v); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
	if err := ValidateTopicValue("nope", "1"); !errors.Is(err, ErrUnknownConfig) {
		t.Errorf("unknown: %v", err)
	}
}
