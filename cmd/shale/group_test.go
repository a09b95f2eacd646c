package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestGroupVerbs(t *testing.T) {
	addr := startCLINode(t)
	with := func(args ...string) []string { return append(args, "--bootstrap", addr) }
	cliOK(t, with("topic", "create", "jobs", "-p", "2")...)
	cliOK(t, with("topic", "create", "single", "-p", "1")...)
	cliOK(t, with("produce", "jobs", "testdata/input_p0.txt", "-p", "0")...)
	cliOK(t, with("produce", "jobs", "testdata/input_p1.txt", "-p", "1")...)
	cliOK(t, with("produce", "single", "testdata/input_p0.txt")...)

	// Group mode reads everything once and commits what it printed.
	if got := cliOK(t, with("consume", "jobs", "--group", "g1", "--until", "end", "-f", `%p:%o `)...); len(strings.Fields(got)) != 5 {
		t.Fatalf("group g1 read %q", got)
	}
	golden(t, "group_describe_g1.txt", cliOK(t, with("group", "describe", "g1")...))

	// -n commits only what was printed; the next run resumes there.
	if got := cliOK(t, with("consume", "single", "-g", "g2", "-n", "2", "-f", `%v `)...); got != "alice:1 bob:2 " {
		t.Fatalf("g2 first run %q", got)
	}
	if got := cliOK(t, with("consume", "single", "-g", "g2", "--until", "end", "-f", `%v `)...); got != "carol:3 " {
		t.Fatalf("g2 second run %q", got)
	}
	golden(t, "group_list.txt", cliOK(t, with("group", "list")...))

	// Shell completion asks the cluster for topic and group names (the
	// word being completed is the last argument).
	for _, c := range []struct {
		args      []string
		want, not string
	}{
		{[]string{"consume", "--bootstrap", addr, "j"}, "jobs\n", "single"},
		{[]string{"produce", "--bootstrap", addr, ""}, "single\n", "__consumer_offsets"},
		{[]string{"group", "describe", "--bootstrap", addr, "g"}, "g1\ng2\n", "jobs"},
		{[]string{"group", "reset-offsets", "g1", "--bootstrap", addr, "--topic", "s"}, "single\n", "jobs"},
		{[]string{"produce", "jobs", "--bootstrap", addr, "testdata/"}, ":0\n", "single"}, // files: the shell's
	} {
		out := cliOK(t, append([]string{"__complete"}, c.args...)...)
		if !strings.Contains(out, c.want) || strings.Contains(out, c.not) {
			t.Errorf("complete %q:\n%s", c.args, out)
		}
	}
	if out := cliOK(t, with("topic", "list", "--internal")...); !strings.Contains(out, "__consumer_offsets") {
		t.Fatalf("list --internal lacks __consumer_offsets:\n%s", out)
	}

	// reset-offsets: a dry run commits nothing; a real one does.
	golden(t, "group_reset_dry.txt", cliOK(t, with("group", "reset-offsets", "g1", "--topic", "jobs", "--to", "earliest", "--dry-run")...))
	var d []groupDescription
	if err := json.Unmarshal([]byte(cliOK(t, with("group", "describe", "g1", "--output", "json")...)), &d); err != nil {
		t.Fatal(err)
	}
	if len(d) != 1 || d[0].TotalLag != 0 || len(d[0].Partitions) != 2 {
		t.Fatalf("after dry run: %+v", d)
	}
	golden(t, "group_reset.txt", cliOK(t, with("group", "reset-offsets", "g1", "--topic", "jobs", "--to", "earliest")...))
	golden(t, "group_describe_g1_reset.txt", cliOK(t, with("group", "describe", "g1")...))
	var plan resetPlan
	if err := json.Unmarshal([]byte(cliOK(t, with("group", "reset-offsets", "g1", "-t", "jobs", "--partition", "0", "--to", "-1", "--output", "json")...)), &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Partitions) != 1 || plan.Partitions[0] != (resetOffset{Topic: "jobs", Partition: 0, OldOffset: 0, NewOffset: 2, LogEndOffset: 3, Lag: 1}) {
		t.Fatalf("reset to -1: %+v", plan)
	}
	if got := cliOK(t, with("consume", "jobs", "--group", "g1", "--until", "end", "-f", `%p:%o `)...); len(strings.Fields(got)) != 3 || !strings.Contains(got, "0:2") {
		t.Fatalf("g1 after reset read %q", got)
	}

	// A group with a live member is not reset.
	member := joinGroup(t, addr, "g3", "single")
	defer member.Close()
	if _, errOut, code := cliRun(t, with("group", "reset-offsets", "g3", "--topic", "single", "--to", "earliest")...); code != 1 || !strings.Contains(errOut, "active members") {
		t.Fatalf("reset of an active group: exit %d: %s", code, errOut)
	}
	if out := cliOK(t, with("group", "describe", "g3")...); !regexp.MustCompile(`(?m)^MEMBERS +1$`).MatchString(out) || !strings.Contains(out, "cli-test-member") {
		t.Fatalf("describe active group:\n%s", out)
	}

	for _, args := range [][]string{{"group"}, {"group", "frob"}, {"group", "describe"}, {"group", "reset-offsets", "g1", "--to", "earliest"},
		{"group", "reset-offsets", "g1", "--topic", "jobs"}, {"group", "reset-offsets", "g1", "--topic", "jobs", "--to", "soon"}} {
		if _, _, code := cliRun(t, with(args...)...); code != 2 {
			t.Errorf("shale %v: exit %d, want 2", args, code)
		}
	}
}

// joinGroup starts a franz-go group member and polls until it has records,
// which means it has joined and holds the topic's partitions.
func joinGroup(t *testing.T, addr, group, topic string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ClientID("cli-test-member"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if fs := cl.PollFetches(ctx); fs.NumRecords() > 0 {
			return cl
		}
	}
	cl.Close()
	t.Fatalf("member of %s got no records", group)
	return nil
}
