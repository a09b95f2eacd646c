package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

func TestClusterStatus(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	cl := testnode.Client(t, n.KafkaAddr())
	ctx := proctest.Context(t, 20*time.Second)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "status"); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"cluster", "status", "--bootstrap", n.KafkaAddr(), "--output", "json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var st clusterStatusOut
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(st.Brokers) != 1 || st.Controller != st.Brokers[0].NodeID || st.ClusterID == "" {
		t.Fatalf("brokers/controller: %+v", st)
	}
	parts := 0
	for _, p := range st.Partitions {
		if p.Topic == "status" {
			parts++
			if p.Leader != st.Brokers[0].NodeID || len(p.ISR) != 1 {
				t.Fatalf("partition %+v", p)
			}
		}
	}
	if parts != 2 {
		t.Fatalf("want 2 partitions of topic status, got %d", parts)
	}
	out.Reset()
	if code := run([]string{"cluster", "status", "--bootstrap", n.KafkaAddr(), "--topic", "status"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	text := out.String()
	for _, want := range []string{"controller 0", "NODE", "status  1", "*"} {
		if !strings.Contains(text, want) {
			t.Fatalf("text output lacks %q:\n%s", want, text)
		}
	}
	if code := run([]string{"cluster", "nope"}, &out, &errb); code != 2 {
		t.Fatalf("bad verb exit %d", code)
	}
}
