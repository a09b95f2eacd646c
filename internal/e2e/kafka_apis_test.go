package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
)

// apiRow is one row of docs/node.md's table of Kafka APIs served.
type apiRow struct {
	name     string
	key      int16
	min, max int16
	file     string
}

func (r apiRow) String() string {
	return fmt.Sprintf("%s (key %d) v%d-%d in %s", r.name, r.key, r.min, r.max, r.file)
}

var apiRowRE = regexp.MustCompile("^\\| (\\w+) \\| (\\d+) \\| (\\d+)(?:-(\\d+))? \\| `([^`]+)` \\|$")

// docAPIs parses the table under "## Kafka APIs served" in docs/node.md.
func docAPIs(t *testing.T, root string) []apiRow {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", "node.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []apiRow
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			in = line == "## Kafka APIs served"
			continue
		}
		if !in || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| API ") {
			continue
		}
		m := apiRowRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("docs/node.md: row %q is not | API | key | versions | `file` |", line)
		}
		r := apiRow{name: m[1], file: m[5]}
		r.key, r.min = atoi16(t, m[2]), atoi16(t, m[3])
		r.max = r.min
		if m[4] != "" {
			r.max = atoi16(t, m[4])
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 20 {
		t.Fatalf("docs/node.md: found only %d APIs in the table", len(rows))
	}
	return rows
}

func atoi16(t *testing.T, s string) int16 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	return int16(n)
}

// headerRE finds "<Name> (key N), versions A-B" or "version A" in a file's
// opening comment.
var headerRE = regexp.MustCompile(`(\w+) \(key (\d+)\),\s+(?://\s*)?versions? (\d+)(?:-(\d+))?`)

// fileHeaders returns the APIs that a Go file's opening comment block (the
// comments before its import block) says it serves, as "name key min-max".
func fileHeaders(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	if i := strings.Index(src, "\nimport"); i >= 0 {
		src = src[:i]
	}
	out := map[string]string{}
	for _, m := range headerRE.FindAllStringSubmatch(src, -1) {
		hi := m[4]
		if hi == "" {
			hi = m[3]
		}
		out[strings.ToLower(m[1])] = m[2] + " " + m[3] + "-" + hi
	}
	return out
}

// kafkaNames are Kafka's names of the keys that kmsg spells otherwise.
var kafkaNames = map[int16]string{45: "AlterPartitionReassignments"}

// TestKafkaAPIsAgree checks that the three places that name an API's
// versions agree: a real node's ApiVersions answer (computed from its
// registered handlers), the table in docs/node.md, and the opening comment
// of the handler's file that the table names. Its KafkaParity subtest holds
// the same answer to Kafka's newest versions (checkKafkaParity).
func TestKafkaAPIsAgree(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	rows := docAPIs(t, root)

	n := newNode(t, t.TempDir())
	n.Start()
	n.WaitReady()
	cl := newClient(t, n.Kafka())
	ctx := proctest.Context(t, 30*time.Second)
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "e2e", "1.0"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions: error %d", resp.ErrorCode)
	}
	served := map[int16]kmsg.ApiVersionsResponseApiKey{}
	for _, k := range resp.ApiKeys {
		served[k.ApiKey] = k
	}

	documented := map[int16]bool{}
	for _, r := range rows {
		if documented[r.key] {
			t.Errorf("docs/node.md: key %d listed twice", r.key)
		}
		documented[r.key] = true
		if want := kmsg.NameForKey(r.key); !strings.EqualFold(want, r.name) && kafkaNames[r.key] != r.name {
			t.Errorf("docs/node.md: %v: kmsg names key %d %s", r, r.key, want)
		}
		k, ok := served[r.key]
		switch {
		case !ok:
			t.Errorf("docs/node.md lists %v, the node does not serve it", r)
		case k.MinVersion != r.min || k.MaxVersion != r.max:
			t.Errorf("docs/node.md lists %v, the node serves v%d-%d", r, k.MinVersion, k.MaxVersion)
		}
		heads := fileHeaders(t, filepath.Join(root, r.file))
		want := fmt.Sprintf("%d %d-%d", r.key, r.min, r.max)
		if got, ok := heads[strings.ToLower(r.name)]; !ok {
			t.Errorf("%s does not open with \"%s (key %d), versions %d-%d\" (it names %v)", r.file, r.name, r.key, r.min, r.max, heads)
		} else if got != want {
			t.Errorf("%s opens with %s as key %s, the docs and the node say %s", r.file, r.name, got, want)
		}
	}
	var missing []string
	for key, k := range served {
		if !documented[key] {
			missing = append(missing, fmt.Sprintf("%s (key %d) v%d-%d", kmsg.NameForKey(key), key, k.MinVersion, k.MaxVersion))
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("the node serves %s, docs/node.md does not list it", m)
	}

	t.Run("KafkaParity", func(t *testing.T) { checkKafkaParity(t, root, served) })
	t.Run("Features", func(t *testing.T) { checkFeatures(t, resp) })
}

// checkFeatures holds the feature flags of an ApiVersions v4 answer
// (KIP-584) to what is built, as Kafka 4.4 finalizes them for a new
// cluster: transaction.version 2 (supported 0-2) and group.version 1
// (supported 0-1, KIP-848's consumer groups), share.version 1 (supported
// 0-1, KIP-932's share groups).
func checkFeatures(t *testing.T, resp *kmsg.ApiVersionsResponse) {
	want := map[string][3]int16{"transaction.version": {0, 2, 2}, "group.version": {0, 1, 1}, "share.version": {0, 1, 1}}
	got := map[string][3]int16{}
	for _, f := range resp.SupportedFeatures {
		got[f.Name] = [3]int16{f.MinVersion, f.MaxVersion, 0}
	}
	for _, f := range resp.FinalizedFeatures {
		g := got[f.Name]
		if f.MinVersionLevel != f.MaxVersionLevel {
			t.Errorf("%s finalized at %d-%d: a finalized feature has one level", f.Name, f.MinVersionLevel, f.MaxVersionLevel)
		}
		g[2] = f.MaxVersionLevel
		got[f.Name] = g
	}
	if resp.FinalizedFeaturesEpoch < 0 {
		t.Errorf("FinalizedFeaturesEpoch %d with finalized features", resp.FinalizedFeaturesEpoch)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("features (min, max, finalized): %v, want %v", got, want)
	}
}
