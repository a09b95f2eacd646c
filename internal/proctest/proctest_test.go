package proctest

import "testing"

func TestParseLogfmt(t *testing.T) {
	got := ParseLogfmt(`time=2026-11-29T12:00:00Z level=INFO msg="became leader" node=2 topic=ha partition=3 leader_epoch=4 err="a \"quoted\" word"`)
	want := map[string]string{"time": "2026-11-29T12:00:00Z", "level": "INFO", "msg": "became leader", "node": "2",
		"topic": "ha", "partition": "3", "leader_epoch": "4", "err": `a "quoted" word`}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d keys, want %d: %v", len(got), len(want), got)
	}
	// An = inside a quoted value does not start a key.
	if kv := ParseLogfmt(`msg=x err="a \"quoted\" x=y" leader=2`); kv["err"] != `a "quoted" x=y` || kv["leader"] != "2" || len(kv) != 3 {
		t.Errorf("quoted x=y: %v", kv)
	}
}
