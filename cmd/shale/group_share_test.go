package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestGroupVerbsShareGroup: shale group list shows a KIP-932 share group
// (type share), and describe its member's epoch and assignment and, per
// partition, the share-partition start offset and lag; reset-offsets of
// the share group is refused while it has a member, and once it left
// plans (dry run) and moves the start offset (AlterShareGroupOffsets).
func TestGroupVerbsShareGroup(t *testing.T) {
	addr := startCLINode(t)
	with := func(args ...string) []string { return append(args, "--bootstrap", addr) }
	cliOK(t, with("topic", "create", "jobs-share", "-p", "1")...)
	cl := testnode.Client(t, addr, kgo.ShareGroup("gshare"), kgo.ConsumeTopics("jobs-share"))
	ctx := proctest.Context(t, 90*time.Second)
	go func() { // ends when cl closes
		for ctx.Err() == nil && !cl.PollFetches(ctx).IsClientClosed() {
		}
	}()
	prod := testnode.Client(t, addr)
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

	// reset-offsets of the share group: refused while it has its member;
	// once it left, a dry run moves nothing and a real one moves the
	// share-partition's start offset (AlterShareGroupOffsets).
	if _, errOut, code := cliRun(t, with("group", "reset-offsets", "gshare", "--topic", "jobs-share", "--to", "earliest")...); code != 1 ||
		!strings.Contains(errOut, "active members") || !strings.Contains(errOut, "Stable with 1 members") {
		t.Fatalf("reset of the share group with a member: exit %d: %s", code, errOut)
	}
	cl.Close()
	if err := proctest.WaitFor(30*time.Second, func() bool {
		d = nil
		out, _, code := cliRun(t, with("group", "describe", "gshare", "--output", "json")...)
		return code == 0 && json.Unmarshal([]byte(out), &d) == nil && len(d) == 1 && d[0].State == "Empty"
	}); err != nil {
		t.Fatalf("the share group's member never left: %+v", d)
	}
	var plan resetPlan
	if err := json.Unmarshal([]byte(cliOK(t, with("group", "reset-offsets", "gshare", "--topic", "jobs-share", "--to", "4", "--dry-run", "--output", "json")...)), &plan); err != nil {
		t.Fatal(err)
	}
	if plan.Type != "share" || !plan.DryRun || len(plan.Partitions) != 1 ||
		plan.Partitions[0] != (resetOffset{Topic: "jobs-share", Partition: 0, OldOffset: 10, NewOffset: 4, LogEndOffset: 10, Lag: 6}) {
		t.Fatalf("share reset dry run: %+v", plan)
	}
	startOffset := func() int64 {
		t.Helper()
		d = nil
		if err := json.Unmarshal([]byte(cliOK(t, with("group", "describe", "gshare", "--output", "json")...)), &d); err != nil || len(d) != 1 || len(d[0].Partitions) != 1 {
			t.Fatalf("describe gshare: %v %+v", err, d)
		}
		return d[0].Partitions[0].CurrentOffset
	}
	if o := startOffset(); o != 10 {
		t.Fatalf("after the dry run: start offset %d, want 10", o)
	}
	if out := cliOK(t, with("group", "reset-offsets", "gshare", "--topic", "jobs-share", "--to", "4")...); !strings.Contains(out, "share group start offsets reset") {
		t.Fatalf("share reset: %s", out)
	}
	if o := startOffset(); o != 4 {
		t.Fatalf("after the reset: start offset %d, want 4", o)
	}
}
