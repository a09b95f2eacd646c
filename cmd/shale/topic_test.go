package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestTopicVerbs(t *testing.T) {
	addr := startCLINode(t)
	bs := []string{"--bootstrap", addr}
	golden(t, "topic_create.txt", cliOK(t, append([]string{"topic", "create", "orders", "-p", "3", "-r", "1", "-c", "retention.ms=3600000", "-c", "cleanup.policy=delete"}, bs...)...))
	cliOK(t, append([]string{"topic", "create", "audit", "--partitions", "1"}, bs...)...)

	// Creating an existing topic fails with the broker's error on its row.
	out, _, code := cliRun(t, append([]string{"topic", "create", "orders"}, bs...)...)
	if code != 1 || !strings.Contains(out, "TOPIC_ALREADY_EXISTS") {
		t.Fatalf("create existing: exit %d\n%s", code, out)
	}
	golden(t, "topic_list.txt", cliOK(t, append([]string{"topic", "list"}, bs...)...))
	golden(t, "topic_describe.txt", cliOK(t, append([]string{"topic", "describe", "orders"}, bs...)...))

	// alter-config: set one, remove one; a dry run changes nothing; a bad
	// value is refused.
	golden(t, "topic_alter.txt", cliOK(t, append([]string{"topic", "alter-config", "orders", "--set", "retention.ms=7200000", "--delete", "cleanup.policy"}, bs...)...))
	cliOK(t, append([]string{"topic", "alter-config", "orders", "--set", "retention.ms=1", "--dry-run"}, bs...)...)
	if _, errOut, code := cliRun(t, append([]string{"topic", "alter-config", "orders", "--set", "retention.ms=soon"}, bs...)...); code != 1 {
		t.Fatalf("bad value: exit %d: %s", code, errOut)
	}
	var desc topicDescription
	if err := json.Unmarshal([]byte(cliOK(t, append([]string{"topic", "describe", "orders", "--output", "json", "--all-configs"}, bs...)...)), &desc); err != nil {
		t.Fatal(err)
	}
	configs := map[string]topicConfig{}
	for _, c := range desc.Configs {
		configs[c.Name] = c
	}
	if c := configs["retention.ms"]; c.Value != "7200000" || c.Source != "DYNAMIC_TOPIC_CONFIG" {
		t.Fatalf("retention.ms after alter: %+v", c)
	}
	if c := configs["cleanup.policy"]; c.Value != "delete" || c.Source == "DYNAMIC_TOPIC_CONFIG" {
		t.Fatalf("cleanup.policy after delete: %+v", c)
	}
	if len(desc.Partitions) != 3 || desc.Partitions[2].Leader < 0 || len(desc.Partitions[2].ISR) != 1 || desc.ID == "" {
		t.Fatalf("partitions: %+v", desc)
	}

	golden(t, "topic_delete.txt", cliOK(t, append([]string{"topic", "delete", "audit"}, bs...)...))
	if out := cliOK(t, append([]string{"topic", "list", "--output", "json"}, bs...)...); strings.Contains(out, "audit") || !strings.Contains(out, `"topic": "orders"`) {
		t.Fatalf("list after delete:\n%s", out)
	}
	if _, errOut, code := cliRun(t, append([]string{"topic", "describe", "audit"}, bs...)...); code != 1 || !strings.Contains(errOut, "unknown topic") {
		t.Fatalf("describe deleted: exit %d: %s", code, errOut)
	}
	// Deleting it again fails with the broker's error on its row.
	if out, _, code := cliRun(t, append([]string{"topic", "delete", "audit"}, bs...)...); code != 1 || !strings.Contains(out, "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("delete deleted: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"topic"}, {"topic", "frob"}, {"topic", "create"}, {"topic", "describe", "a", "b"},
		{"topic", "create", "x", "-c", "novalue"}, {"topic", "alter-config", "orders"}, {"topic", "list", "--output", "yaml"}} {
		if _, _, code := cliRun(t, append(args, bs...)...); code != 2 {
			t.Errorf("shale %v: exit %d, want 2", args, code)
		}
	}
}
