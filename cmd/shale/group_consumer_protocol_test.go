package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
)

// TestGroupVerbsConsumerProtocol: shale group list and describe show a
// KIP-848 group's type, epochs and its member's epoch and assignment.
func TestGroupVerbsConsumerProtocol(t *testing.T) {
	addr := startCLINode(t)
	with := func(args ...string) []string { return append(args, "--bootstrap", addr) }
	cliOK(t, with("topic", "create", "jobs848", "-p", "2")...)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("g848"), kgo.ConsumeTopics("jobs848"),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := proctest.Context(t, 60*time.Second)
	go func() { // ends when cl closes
		for ctx.Err() == nil && !cl.PollFetches(ctx).IsClientClosed() {
		}
	}()
	var d []groupDescription
	if err := proctest.WaitFor(30*time.Second, func() bool {
		d = nil
		out, _, code := cliRun(t, with("group", "describe", "g848", "--output", "json")...)
		if code != 0 || json.Unmarshal([]byte(out), &d) != nil || len(d) != 1 || len(d[0].Members) != 1 {
			return false
		}
		m := d[0].Members[0]
		return d[0].State == "Stable" && m.MemberEpoch != nil && *m.MemberEpoch == d[0].AssignmentEpoch && len(m.Assigned["jobs848"]) == 2
	}); err != nil {
		t.Fatalf("group describe never showed the stable consumer group: %+v", d)
	}
	if d[0].GroupProtocol != "consumer" || d[0].GroupEpoch < 1 || d[0].Protocol != "uniform" {
		t.Errorf("describe: %+v", d[0])
	}
	text := cliOK(t, with("group", "describe", "g848")...)
	for _, want := range []string{"GROUP-PROTOCOL", "consumer", "MEMBER-EPOCH", "jobs848:0,1"} {
		if !strings.Contains(text, want) {
			t.Errorf("describe lacks %q:\n%s", want, text)
		}
	}
	var list []groupListEntry
	if err := json.Unmarshal([]byte(cliOK(t, with("group", "list", "--output", "json")...)), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Type != "consumer" || list[0].State != "Stable" {
		t.Errorf("group list: %+v", list)
	}
}
