package layering

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/shale-io/shale"

// A rule says which Shale packages the packages under a directory may import
// (in their non-test files; tests may use the harness). A package under
// within may always import others under within.
type rule struct {
	within string   // a directory of the module, relative to its root
	allow  []string // directories whose packages (and those below) may be imported
	why    string
}

// rules are DESIGN.md's "Imports point down the list's layers".
var rules = []rule{
	{within: "segment", why: "the bytes on local disk stand alone"},
	{within: "infra/objstore", why: "the object store interface stands alone"},
	{within: "kafka", why: "the Kafka transport stands alone: handlers register on it, metrics reach it through hooks"},
	{within: "authz", allow: []string{"kafka"}, why: "the authorizer's decisions stand alone; they read only a request's connection"},
	{within: "adminapi", why: "the admin API's JSON is shared by server, SDK and CLI; standard library only"},
	{within: "internal/invariants", why: "the invariant checks are imported by every layer"},
	{within: "quota", why: "quota arithmetic stands alone: the control plane stores its configurations, handlers record on it"},
	{within: "sdk", allow: []string{"adminapi"}, why: "applications link the SDK without the server"},
}

// harness are the directories allowed to import anything: the binaries and
// the test harness that wire or drive whole nodes.
var harness = []string{"cmd", "internal", "chaos"}

// top are the packages only the harness may import.
var top = []string{"broker", "cmd", "sdk", "chaos", "internal"}

func TestLayering(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := imports(t, root)
	if len(pkgs) < 10 {
		t.Fatalf("found only %d packages under %s", len(pkgs), root)
	}
	for _, r := range rules {
		if _, err := os.Stat(filepath.Join(root, r.within)); err != nil {
			t.Errorf("rule for %s: %v (a moved package must move its rule)", r.within, err)
		}
	}
	var bad []string
	for dir, imps := range pkgs {
		for _, imp := range imps {
			if msg := check(dir, imp); msg != "" {
				bad = append(bad, msg)
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// check returns why dir may not import imp (both module-relative), or "".
func check(dir, imp string) string {
	if under(dir, imp) || under(imp, dir) {
		return ""
	}
	for _, r := range rules {
		if !under(dir, r.within) {
			continue
		}
		ok := under(imp, r.within)
		for _, a := range r.allow {
			ok = ok || under(imp, a)
		}
		if !ok {
			return dir + " imports " + imp + ": " + r.within + "/ may import only " + strings.Join(append([]string{r.within}, r.allow...), ", ") + " (" + r.why + ")"
		}
	}
	for _, h := range harness {
		if under(dir, h) {
			return ""
		}
	}
	for _, tp := range top {
		if under(imp, tp) && !(tp == "internal" && under(imp, "internal/invariants")) && !(tp == "broker" && under(dir, "broker")) {
			return dir + " imports " + imp + ": only the binaries and the harness (" + strings.Join(harness, ", ") + ") import " + tp + "/"
		}
	}
	return ""
}

// under reports whether path is dir or below it.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// imports maps each package directory of the module (relative to root) to
// the Shale packages its non-test files import.
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
			if p == module || strings.HasPrefix(p, module+"/") {
				out[rel] = append(out[rel], strings.TrimPrefix(strings.TrimPrefix(p, module), "/"))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCheck shows that the rules catch each kind of bad import.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		dir, imp string
		bad      bool
	}{
		{"segment", "segment/batch", false},
		{"segment/dumplog", "segment/batch", false},
		{"segment", "partition", true},
		{"infra/objstore/s3bucket", "infra/objstore", false},
		{"infra/objstore", "infra/config", true},
		{"kafka", "infra/metrics", true},
		{"ingest", "kafka", false},
		{"partition", "broker", true},
		{"tiering", "sdk", true},
		{"fetch", "cmd/shale", true},
		{"group", "internal/proctest", true},
		{"partition", "internal/invariants", false},
		{"sdk", "adminapi", false},
		{"adminapi", "segment", true},
		{"sdk", "partition", true},
		{"cmd/shale", "broker", false},
		{"internal/testnode", "broker", false},
		{"broker", "tiering", false},
	} {
		if got := check(c.dir, c.imp) != ""; got != c.bad {
			t.Errorf("check(%s imports %s) bad = %v, want %v", c.dir, c.imp, got, c.bad)
		}
	}
}
