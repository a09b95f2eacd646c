package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaAPI is one line of testdata/kafka_api_versions.txt: an API as Kafka
// defines it.
type kafkaAPI struct {
	key       int16
	name      string
	newest    int16    // the newest version Kafka serves
	json      string   // validVersions of the request JSON, "-" when newer than the snapshot
	listeners []string // who answers it: broker, controller, zkBroker
}

// clientFacing reports whether a Kafka broker answers the API on its
// client listener.
func (a kafkaAPI) clientFacing() bool { return slices.Contains(a.listeners, "broker") }

// kafkaAPIs reads testdata/kafka_api_versions.txt.
func kafkaAPIs(t *testing.T) []kafkaAPI {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "kafka_api_versions.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var apis []kafkaAPI
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 5 {
			t.Fatalf("kafka_api_versions.txt:%d: %q is not key name newest validVersions listeners", n, line)
		}
		a := kafkaAPI{key: atoi16(t, fs[0]), name: fs[1], newest: atoi16(t, fs[2]), json: fs[3], listeners: strings.Split(fs[4], ",")}
		if a.json != "-" {
			hi := a.json[strings.LastIndex(a.json, "-")+1:]
			if v := atoi16(t, hi); v > a.newest {
				t.Fatalf("kafka_api_versions.txt:%d: %s: newest v%d is below the JSON's validVersions %s", n, a.name, a.newest, a.json)
			}
		}
		apis = append(apis, a)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(apis) < 80 {
		t.Fatalf("kafka_api_versions.txt: found only %d APIs", len(apis))
	}
	return apis
}

// gapRow is one row of docs/node.md's table of APIs not served at Kafka's
// newest version.
type gapRow struct {
	name   string
	key    int16
	kafka  int16
	reason string
}

var gapRowRE = regexp.MustCompile(`^\| (\w+) \| (\d+) \| (\d+) \| (.*) \|$`)

const gapHeading = "### Kafka APIs not served at Kafka's newest version"

// docGaps parses the table under gapHeading in docs/node.md.
func docGaps(t *testing.T, root string) []gapRow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "node.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []gapRow
	in, found := false, false
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(line, "#") {
			in = line == gapHeading
			found = found || in
			continue
		}
		if !in || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| API ") {
			continue
		}
		m := gapRowRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("docs/node.md: row %q is not | API | key | Kafka | reason |", line)
		}
		rows = append(rows, gapRow{name: m[1], key: atoi16(t, m[2]), kafka: atoi16(t, m[3]), reason: strings.TrimSpace(m[4])})
	}
	if !found {
		t.Fatalf("docs/node.md has no %q section", gapHeading)
	}
	return rows
}

// checkKafkaParity holds what a node serves (its ApiVersions answer) to
// Kafka's newest versions (testdata/kafka_api_versions.txt): every API a
// Kafka broker answers on its client listener is served at Kafka's newest
// version, or docs/node.md lists it as not served there with a reason. The
// data itself is held to franz-go's kmsg, which learns Kafka's new versions
// as they are released: a version kmsg knows and the data does not fails
// here.
func checkKafkaParity(t *testing.T, root string, served map[int16]kmsg.ApiVersionsResponseApiKey) {
	apis := kafkaAPIs(t)
	byKey := map[int16]kafkaAPI{}
	for _, a := range apis {
		if _, dup := byKey[a.key]; dup {
			t.Errorf("kafka_api_versions.txt: key %d listed twice", a.key)
		}
		byKey[a.key] = a
	}
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		a, ok := byKey[key]
		switch {
		case !ok:
			t.Errorf("kmsg knows %s (key %d) up to v%d; kafka_api_versions.txt does not list it", kmsg.NameForKey(key), key, req.MaxVersion())
		case req.MaxVersion() > a.newest:
			t.Errorf("kmsg knows %s (key %d) v%d; kafka_api_versions.txt says Kafka's newest is v%d", a.name, key, req.MaxVersion(), a.newest)
		}
	}

	gaps := map[int16]gapRow{}
	for _, g := range docGaps(t, root) {
		if _, dup := gaps[g.key]; dup {
			t.Errorf("docs/node.md: %s (key %d) listed twice as not served at Kafka's newest version", g.name, g.key)
		}
		gaps[g.key] = g
		a, ok := byKey[g.key]
		switch {
		case !ok || !a.clientFacing():
			t.Errorf("docs/node.md lists %s (key %d) as not served at Kafka's newest version; Kafka's brokers do not serve it to clients", g.name, g.key)
		case a.name != g.name:
			t.Errorf("docs/node.md names key %d %s, Kafka names it %s", g.key, g.name, a.name)
		case g.kafka != a.newest:
			t.Errorf("docs/node.md says Kafka serves %s up to v%d; kafka_api_versions.txt says v%d", g.name, g.kafka, a.newest)
		case g.reason == "":
			t.Errorf("docs/node.md lists %s as not served at Kafka's newest version without a reason", g.name)
		}
	}

	var atNewest, below int
	for _, a := range apis {
		if !a.clientFacing() {
			continue
		}
		k, ok := served[a.key]
		g, listed := gaps[a.key]
		have := "not served"
		if ok {
			have = fmt.Sprintf("served v%d-%d", k.MinVersion, k.MaxVersion)
		}
		switch {
		case ok && k.MaxVersion > a.newest:
			t.Errorf("%s (key %d) is %s, above Kafka's newest v%d: update kafka_api_versions.txt", a.name, a.key, have, a.newest)
		case ok && k.MaxVersion == a.newest:
			atNewest++
			if listed {
				t.Errorf("%s (key %d) is %s, Kafka's newest; docs/node.md still lists it as not served there (%q): remove the row", a.name, a.key, have, g.reason)
			}
		default:
			below++
			if !listed {
				t.Errorf("%s (key %d) is %s, Kafka serves up to v%d: build it, or list it in docs/node.md under %q with a reason", a.name, a.key, have, a.newest, gapHeading)
			}
		}
	}
	t.Logf("Kafka's client-facing APIs: %d served at Kafka's newest version, %d listed as not", atNewest, below)
}
