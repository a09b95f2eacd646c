package config

import (
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md from the config struct")

// TestReferenceDocIsCurrent keeps docs/configuration.md generated from the
// config struct and the topic config table: run `go test ./infra/config
// -update` after changing either.
func TestReferenceDocIsCurrent(t *testing.T) {
	const path = "../../docs/configuration.md"
	want := "# Configuration reference\n\n" +
		"Generated from `infra/config` by `go test ./infra/config -update`; do not edit by hand.\n\n" +
		"Settings come from defaults, then the YAML file named by `--config` (or `SHALE_CONFIG`), then `SHALE_*` " +
		"environment variables, then flags; each later source wins.\n\n" + Reference()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./infra/config -update)", err)
	}
	if string(got) != want {
		t.Fatal("docs/configuration.md is stale: run go test ./infra/config -update")
	}
}
