package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
)

// TestGroupVerbsShareGroup: shale group list shows a KIP-932 share group
// (type share), and describe its member's epoch and assignment and, per
// partition, the share-partition start offset and lag.
func TestGroupVerbsShareGroup(t *testing.T) {
	addr := startCLINode(t)
	with := func(args ...string) []string { return append(args, "--bootstrap", addr) }
	cliOK(t, with("topic", "create", "jobs-share", "-p", "1")...)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ShareGroup("gshare"), kgo.ConsumeTopics("jobs-share"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := proctest.Context(t, 90*time.Second)
	go func() { // ends when cl closes
		for ctx.Err() == nil && !cl.PollFetches(ctx).IsClientClosed() {
		}
	}()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var d []groupDescription
	produced := false
	if err := proctest.WaitFor(60*time.Second, func() bool {
		d = nil
		out, _, code := cliRun(t, with("group", "describe", "gshare", "--output", "json")...)
		if code != 0 || json.Unmarshal([]byte(out), &d) != nil || len(d) != 1 || len(d[0].Members) != 1 {
			return false
		}
		if !produced {
			for i := range 10 {
				if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "jobs-share", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			produced = true
			return false
		}
		m := d[0].Members[0]
		return d[0].State == "Stable" && m.MemberEpoch != nil && len(m.Assigned["jobs-share"]) == 1 &&
			len(d[0].Partitions) == 1 && d[0].Partitions[0].CurrentOffset == 10 && d[0].Partitions[0].Lag == 0
	}); err != nil {
		t.Fatalf("group describe never showed the share group at offset 10 with no lag: %+v", d)
	}
	if d[0].GroupProtocol != "share" || d[0].ProtocolType != "share" {
		t.Errorf("describe: %+v", d[0])
	}
	text := cliOK(t, with("group", "describe", "gshare")...)
	for _, want := range []string{"GROUP-PROTOCOL", "share", "MEMBER-EPOCH", "jobs-share:0"} {
		if !strings.Contains(text, want) {
			t.Errorf("describe lacks %q:\n%s", want, text)
		}
	}
	var list []groupListEntry
	if err := json.Unmarshal([]byte(cliOK(t, with("group", "list", "--output", "json")...)), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Type != "share" || list[0].State != "Stable" || list[0].Group != "gshare" {
		t.Errorf("group list: %+v", list)
	}
}
