package layering

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/shale-io/shale"

// ranks places every package of the module (its directory, relative to the
// module root) in a layer. A package's non-test files may import only
// packages of a lower rank (tests may use the harness): imports point
// down, and packages of one rank are siblings that never import each
// other. A new package takes a rank here, or the test fails.
var ranks = map[string]int{
	// 0: leaves, standard library and outside modules only.
	"segment/batch": 0, "segment/vfs": 0, "segment/leaderepoch": 0, "authz/acl": 0, "quota": 0, "clientmetrics": 0, "kafka": 0, "adminapi": 0,
	"infra/objstore": 0, "infra/objstore/faultproxy": 0, "infra/config": 0, "infra/buildinfo": 0, "infra/freeport": 0,
	"infra/tlsreload": 0, "infra/adminauth": 0, "deploy": 0,
	"internal/invariants": 0, "internal/procstat": 0, "internal/testcerts": 0,
	"internal/testjwt": 0, "internal/benchpair": 0, "internal/testlog": 0,
	// the process supervisor under the harnesses (on internal/procstat).
	"internal/proctest/child": 1,
	// the console's embedded single-page app: files only.
	"console": 0,
	// 1: on the leaves: the disk log, the transport's SASL, the authorizer,
	// adapters, the control plane (which stores ACLs and quotas as values),
	// the SDK.
	"segment": 1, "segment/dumplog": 1, "kafka/sasl": 1, "authz": 1,
	"infra/objstore/fsbucket": 1, "infra/objstore/s3bucket": 1, "infra/objstore/objstoretest": 1,
	"infra/interbroker": 1, "infra/metrics": 1, "infra/natsembed": 1,
	"controlplane": 1, "sdk": 1, "lag": 1,
	// 2: a control plane for the unit tests of the packages above it.
	"internal/controlplanetest": 2,
	// 2: one replica of one partition.
	"partition": 2,
	// 3: the cold tier.
	"tiering": 3, "tiering/coldread": 3,
	// 4: restores from the bucket, over the cold tier they read.
	"restore": 4,
	// 4: the replica manager; what the coordinators share (their runtime,
	// over the partitions of their internal topics).
	"replica": 4, "coordinator": 4,
	// 5: the error table, which knows every layer's errors below the
	// handlers.
	"kafkaerr": 5,
	// 6: the API handlers and coordinators, siblings: the metadata and
	// admin APIs (admin) know the coordinators only through the shapes of
	// their topics, which broker hands it.
	"ingest": 6, "fetch": 6, "group": 6, "txn": 6, "share": 6, "admin": 6, "telemetry": 6,
	// 8: the composition root.
	"broker": 8,
	// 9: the binary, and the harness that drives whole nodes.
	"cmd/shale": 9, "chaos": 9, "internal/loadbench": 9, "internal/proctest": 9,
	// 10: the binaries and reports over the harness, and the process-level
	// suites.
	// internal/testnode (in-process nodes and the Kafka helpers the
	// behaviour tests share) is here: it uses proctest's contexts.
	"cmd/shale-chaos": 10, "internal/testnode": 10, "internal/benchreport": 10, "internal/clustertest": 10, "internal/compat": 10, "internal/e2e": 10,
	"internal/groupstest": 10, "internal/kcattest": 10, "internal/layering": 10,
	"internal/membershiptest": 10, "internal/replicationtest": 10, "internal/tieringe2e": 10, "internal/txntest": 10,
	"internal/restoretest": 10,
}

// planned are ranked packages not in the tree yet, and who is writing them.
var planned = map[string]string{}

// A forbidden pair is an import that the ranks alone allow but the design
// does not: from (a package directory and those below it) must not import
// to (a module directory and those below it, or an outside import path
// prefix; only to itself when exact).
type forbidden struct {
	from, to string
	why      string
	exact    bool
}

var forbiddenPairs = []forbidden{
	{from: "controlplane", to: "kafka", why: "the control plane knows no wire protocol"},
	{from: "controlplane", to: "github.com/twmb/franz-go/pkg/kmsg", why: "the control plane knows no wire protocol"},
	{from: "controlplane", to: "authz", why: "the control plane stores ACL bindings (authz/acl), not the request adapter", exact: true},
	{from: "coordinator", to: "kafka", why: "the coordinator runtime knows no Kafka API; the coordinators serve them"},
	{from: "coordinator", to: "github.com/twmb/franz-go/pkg/kmsg", why: "the coordinator runtime knows no Kafka API"},
	{from: "authz/acl", to: "github.com/twmb/franz-go", why: "ACL bindings are values the control plane stores"},
	{from: "segment", to: "infra", why: "the bytes on local disk stand alone"},
	{from: "sdk", to: "kafka", why: "applications link the SDK without the server: it may import only adminapi"},
	{from: "sdk", to: "quota", why: "applications link the SDK without the server"},
	{from: "sdk", to: "segment", why: "applications link the SDK without the server"},
	{from: "sdk", to: "authz", why: "applications link the SDK without the server"},
	{from: "sdk", to: "infra", why: "applications link the SDK without the server"},
	{from: "lag", to: "kafka", why: "the lag sampler is a Kafka client of its own node"},
}

// violations lists each import of graph (package directory -> the module
// directories and outside paths its non-test files import) against ranks
// and forbiddenPairs, and each package without a rank.
func violations(graph map[string][]string) []string {
	var bad []string
	for dir, imps := range graph {
		r, ok := ranks[dir]
		if !ok {
			bad = append(bad, dir+": no rank in internal/layering's table (give the new package a layer)")
			continue
		}
		for _, imp := range imps {
			for _, f := range forbiddenPairs {
				if under(dir, f.from) && (imp == f.to || !f.exact && under(imp, f.to)) {
					bad = append(bad, fmt.Sprintf("%s imports %s: %s", dir, imp, f.why))
				}
			}
			if outside(imp) {
				continue
			}
			ri, ok := ranks[imp]
			switch {
			case !ok:
				bad = append(bad, fmt.Sprintf("%s imports %s, which has no rank", dir, imp))
			case ri == r:
				bad = append(bad, fmt.Sprintf("%s imports %s: both rank %d, siblings never import each other", dir, imp, r))
			case ri > r:
				bad = append(bad, fmt.Sprintf("%s (rank %d) imports %s (rank %d): imports point down", dir, r, imp, ri))
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// outside reports whether an import path is of another module.
func outside(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return strings.Contains(first, ".")
}

func TestLayering(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	graph := imports(t, root)
	if len(graph) < 10 {
		t.Fatalf("found only %d packages under %s", len(graph), root)
	}
	for dir := range ranks {
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil && planned[dir] == "" {
			t.Errorf("rank of %s: %v (a moved package must move its rank)", dir, err)
		}
	}
	for _, f := range forbiddenPairs {
		if _, err := os.Stat(filepath.Join(root, f.from)); err != nil {
			t.Errorf("forbidden pair from %s: %v", f.from, err)
		}
	}
	for _, b := range violations(graph) {
		t.Error(b)
	}
}

// TestBinariesDoNotLinkTesting: no package the shale and shale-chaos
// binaries are built from imports package testing outside its tests (it
// registers test flags and pulls the test runner into the binary). chaos
// did through objstoretest until the fault proxy left it for
// infra/objstore/faultproxy.
func TestBinariesDoNotLinkTesting(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	graph := imports(t, root)
	users := map[string]bool{}
	fset := token.NewFileSet()
	for dir := range graph {
		files, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range af.Imports {
				if s.Path.Value == `"testing"` {
					users[dir] = true
				}
			}
		}
	}
	if len(users) == 0 {
		t.Fatal("no package imports testing: the check finds nothing (internal/proctest does)")
	}
	for _, bin := range []string{"cmd/shale", "cmd/shale-chaos"} {
		seen := map[string]string{bin: ""}
		queue := []string{bin}
		for len(queue) > 0 {
			dir := queue[0]
			queue = queue[1:]
			if users[dir] {
				path := []string{dir}
				for at := seen[dir]; at != ""; at = seen[at] {
					path = append([]string{at}, path...)
				}
				t.Errorf("%s links package testing: %s imports it", bin, strings.Join(path, " -> "))
				break
			}
			for _, imp := range graph[dir] {
				if _, ok := seen[imp]; !ok && !outside(imp) {
					seen[imp] = dir
					queue = append(queue, imp)
				}
			}
		}
	}
}

// under reports whether path is dir or below it.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// imports maps each package directory of the module (relative to root) to
// what its non-test files import: module packages as directories relative
// to root, others as their import paths (the standard library left out).
func imports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" || name == "data") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		if _, ok := out[rel]; !ok {
			out[rel] = nil
		}
		for _, s := range f.Imports {
			p, _ := strconv.Unquote(s.Path.Value)
			switch {
			case p == module || strings.HasPrefix(p, module+"/"):
				p = strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
			case !outside(p):
				continue
			}
			if !slices.Contains(out[rel], p) {
				out[rel] = append(out[rel], p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestViolations is the test of the test: a synthetic import graph with
// one bad edge of each kind fails, and the same graph without it passes.
func TestViolations(t *testing.T) {
	good := map[string][]string{
		"segment":      {"segment/batch"},
		"partition":    {"segment", "segment/batch", "internal/invariants"},
		"controlplane": {"authz/acl", "quota", "github.com/nats-io/nats.go"},
		"txn":          {"coordinator", "partition", "kafka", "github.com/twmb/franz-go/pkg/kmsg"},
		"group":        {"coordinator", "partition", "kafka"},
		"broker":       {"admin", "group", "txn", "ingest", "coordinator"},
		"cmd/shale":    {"broker", "sdk"},
		"sdk":          {"adminapi", "github.com/twmb/franz-go/pkg/kgo"},
	}
	if v := violations(good); len(v) != 0 {
		t.Fatalf("a good graph has violations: %q", v)
	}
	for _, c := range []struct {
		dir, imp, want string
	}{
		{"fetch", "ingest", "siblings"},
		{"group", "ingest", "siblings"},
		{"txn", "group", "siblings"},
		{"group", "txn", "siblings"},
		{"segment", "partition", "imports point down"},
		{"segment", "infra/config", "stand alone"},
		{"infra/objstore", "infra/config", "siblings"},
		{"partition", "broker", "imports point down"},
		{"group", "internal/proctest", "imports point down"},
		{"admin", "broker", "imports point down"},
		{"admin", "group", "siblings"},
		{"admin", "txn", "siblings"},
		{"controlplane", "kafka", "no wire protocol"},
		{"controlplane", "github.com/twmb/franz-go/pkg/kmsg", "no wire protocol"},
		{"controlplane", "authz", "request adapter"},
		{"coordinator", "kafka", "knows no Kafka API"},
		{"sdk", "quota", "without the server"},
		{"kafka", "infra/metrics", "imports point down"},
		{"newpkg", "segment", "no rank"},
		{"fetch", "newpkg", "has no rank"},
	} {
		g := map[string][]string{}
		for k, v := range good {
			g[k] = append([]string(nil), v...)
		}
		g[c.dir] = append(g[c.dir], c.imp)
		v := violations(g)
		if !slices.ContainsFunc(v, func(s string) bool { return strings.Contains(s, c.want) }) {
			t.Errorf("%s imports %s: violations %q, want one saying %q", c.dir, c.imp, v, c.want)
		}
	}
}
