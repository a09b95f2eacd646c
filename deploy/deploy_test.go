// Package deploy holds the files an operator installs Shale with (an
// example configuration, a systemd unit, a container image definition,
// Prometheus alert rules and a Grafana dashboard) and the tests that keep
// them true to the code.
package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/metrics"
)

// TestExampleConfig: deploy/shale.yaml parses (unknown keys are errors),
// validates, and keeps the secure choices its comments promise.
func TestExampleConfig(t *testing.T) {
	cfg := config.Defaults()
	if err := cfg.LoadFile("shale.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cfg.ListenerSecurityProtocolMap, "PLAINTEXT") || cfg.Listeners == "" {
		t.Errorf("the example serves clear text: listeners %q, map %q", cfg.Listeners, cfg.ListenerSecurityProtocolMap)
	}
	if !cfg.AdminAuthenticates() || cfg.AdminSSLCertificateLocation == "" {
		t.Error("the example's admin listener is open to the network without tokens and TLS")
	}
	if cfg.Authorizer != "standard" || cfg.AllowEveryoneIfNoACLFound {
		t.Errorf("the example's authorizer: %q, allow everyone %v", cfg.Authorizer, cfg.AllowEveryoneIfNoACLFound)
	}
	if cfg.NATSReplicas != 3 || cfg.DefaultReplicationFactor != 3 || cfg.TopicDefaults["min.insync.replicas"] != "2" {
		t.Errorf("the example is not a replicated cluster: nats replicas %d, rf %d, min isr %q",
			cfg.NATSReplicas, cfg.DefaultReplicationFactor, cfg.TopicDefaults["min.insync.replicas"])
	}
	if cfg.InterBrokerSASLPassword != "" {
		t.Error("the example holds a password; it belongs in a file or SHALE_* variable")
	}
}

// shaleBinary builds cmd/shale as a static binary (as make image does)
// into a temporary directory.
func shaleBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "shale")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/shale-io/shale/cmd/shale")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build (CGO_ENABLED=0): %v\n%s", err, out)
	}
	return bin
}

// TestSystemdUnit runs systemd-analyze verify on deploy/shale.service,
// with ExecStart pointed at a freshly built binary.
func TestSystemdUnit(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed here, so the unit cannot be verified")
	}
	unit, err := os.ReadFile("shale.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ExecStart=/usr/local/bin/shale serve --config /etc/shale/shale.yaml", "NoNewPrivileges=yes",
		"ProtectSystem=strict", "ReadWritePaths=/var/lib/shale", "User=shale", "LimitNOFILE="} {
		if !bytes.Contains(unit, []byte(want)) {
			t.Errorf("shale.service lacks %q", want)
		}
	}
	bin := shaleBinary(t)
	path := filepath.Join(t.TempDir(), "shale.service")
	if err := os.WriteFile(path, bytes.ReplaceAll(unit, []byte("/usr/local/bin/shale"), []byte(bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(analyze, "verify", path).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestImage checks what deploy/Dockerfile needs of the binary: that it
// builds without cgo and runs alone (the image has no libc). The image
// itself is built where podman or docker can (a daemon for docker).
func TestImage(t *testing.T) {
	df, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(df, []byte("FROM scratch")) || !bytes.Contains(df, []byte("USER 65532:65532")) {
		t.Error("the Dockerfile is no longer a non-root image on an empty base")
	}
	bin := shaleBinary(t)
	out, err := exec.Command("file", bin).CombinedOutput()
	if err == nil && !bytes.Contains(out, []byte("statically linked")) {
		t.Errorf("the CGO_ENABLED=0 binary is not static: %s", out)
	}
	if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil {
		t.Fatalf("the static binary does not run: %v\n%s", err, out)
	}
	engine := ""
	for _, e := range []string{"podman", "docker"} {
		if p, err := exec.LookPath(e); err == nil {
			if exec.Command(p, "info").Run() == nil {
				engine = e
				break
			}
		}
	}
	if engine == "" {
		t.Skip("the image was not built: no podman, and no docker with a running daemon, here (the binary it holds was checked)")
	}
	mk := exec.Command("make", "-C", "..", "image", "IMAGE=shale:test")
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make image (%s): %v\n%s", engine, err, out)
	}
	if out, err := exec.Command(engine, "run", "--rm", "shale:test", "version").CombinedOutput(); err != nil {
		t.Fatalf("%s run shale:test version: %v\n%s", engine, err, out)
	}
}

// metricRef finds the names of Shale's and the Go runtime's series in a
// PromQL expression: every name a node exports starts with one of these.
var metricRef = regexp.MustCompile(`\b(?:kafka|shale|go|process)_[a-zA-Z0-9_]+`)

// checkExprs fails for each name in exprs that the node does not export.
func checkExprs(t *testing.T, file string, exprs []string) {
	t.Helper()
	names := metrics.New(func() metrics.NodeState { return metrics.NodeState{} }).Names()
	exported := func(n string) bool {
		if slices.Contains(names, n) {
			return true
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(n, suffix); ok && slices.Contains(names, base) {
				return true
			}
		}
		return false
	}
	refs := 0
	for _, e := range exprs {
		for _, n := range metricRef.FindAllString(e, -1) {
			refs++
			if !exported(n) {
				t.Errorf("%s: %s is not a series the node exports (in %q)", file, n, e)
			}
		}
	}
	if refs < 10 {
		t.Errorf("%s: only %d series named in %d expressions", file, refs, len(exprs))
	}
}

// TestAlertRules: every rule names series the node exports, has a
// severity and a summary.
func TestAlertRules(t *testing.T) {
	b, err := os.ReadFile("prometheus/shale-alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	seen := map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" || seen[r.Alert] {
				t.Errorf("group %s: a rule without a unique name or an expression: %+v", g.Name, r)
			}
			seen[r.Alert] = true
			if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) || r.Annotations["summary"] == "" {
				t.Errorf("%s: severity %q, summary %q", r.Alert, r.Labels["severity"], r.Annotations["summary"])
			}
			exprs = append(exprs, r.Expr)
		}
	}
	checkExprs(t, "shale-alerts.yaml", exprs)
}

// TestDashboard: the Grafana dashboard is JSON whose every query names
// series the node exports.
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile("grafana/shale-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, p := range d.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			exprs = append(exprs, q.Expr)
		}
	}
	for _, v := range d.Templating.List {
		exprs = append(exprs, v.Definition)
	}
	if d.UID == "" {
		t.Error("the dashboard has no uid")
	}
	checkExprs(t, "shale-dashboard.json", exprs)
}
