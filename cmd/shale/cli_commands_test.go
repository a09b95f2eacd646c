package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/shale-io/shale/adminapi"
)

// parseLine resolves a command line (without "shale") to its command and
// parses its flags and positional arguments with the real flag sets, as
// Execute would, without running it. A verb group without a verb, an
// unknown flag, a flag without its argument, a bad --output or the wrong
// number of arguments is an error.
func parseLine(args []string) (*cobra.Command, error) {
	root := newRootCmd()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return cmd, err
	}
	cmd.InitDefaultHelpFlag()
	if err := cmd.ParseFlags(rest); err != nil {
		return cmd, err
	}
	if help, _ := cmd.Flags().GetBool("help"); help {
		return cmd, nil
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		return cmd, err
	}
	if cmd.HasAvailableSubCommands() {
		return cmd, fmt.Errorf("%s needs a verb", cmd.CommandPath())
	}
	return cmd, nil
}

// allCommands walks the tree below c, c included.
func allCommands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		out = append(out, allCommands(sub)...)
	}
	return out
}

// TestHelpOnEveryCommand: -h and --help on every verb and verb group (and
// the root) print that command's help on stdout and exit 0.
func TestHelpOnEveryCommand(t *testing.T) {
	root := newRootCmd()
	root.InitDefaultCompletionCmd()
	var paths []string
	for _, c := range allCommands(root) {
		paths = append(paths, strings.TrimPrefix(c.CommandPath(), "shale"))
	}
	for _, group := range []string{"topic", "group", "cluster", "replication", "segment", "tier", "completion"} {
		found := false
		for _, p := range paths {
			found = found || strings.TrimSpace(p) == group
		}
		if !found {
			t.Fatalf("no verb group %q in %q", group, paths)
		}
	}
	for _, p := range paths {
		for _, h := range []string{"-h", "--help"} {
			args := append(strings.Fields(p), h)
			out, errOut, code := cliRun(t, args...)
			want := "shale" + p
			if code != 0 || errOut != "" || !strings.Contains(out, "Usage:") || !strings.Contains(out, want) {
				t.Errorf("shale %s: exit %d, stderr %q, stdout:\n%s", strings.Join(args, " "), code, errOut, out)
			}
		}
	}
	if len(paths) < 20 {
		t.Fatalf("only %d commands: %q", len(paths), paths)
	}
}

// TestUsageErrors: a group without a verb, an unknown verb (with a
// suggestion), an unknown flag or a missing flag argument exits 2 with the
// command's usage line on stderr and nothing on stdout.
func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "name a verb"},
		{[]string{"frob"}, "unknown verb"},
		{[]string{"topic"}, "name a verb: alter-config, create, delete, describe, fork, list, restore"},
		{[]string{"topic", "craete"}, `did you mean create?`},
		{[]string{"topic", "fork", "src"}, "name the source topic and the new one"},
		{[]string{"topic", "fork", "src", "new"}, "--at takes an offset N or @TIME"},
		{[]string{"topic", "fork", "src", "new", "--at", "end"}, "--at takes an offset N or @TIME"},
		{[]string{"tier"}, "usage: shale tier"},
		{[]string{"tier", "stat"}, "did you mean status?"},
		{[]string{"segment"}, "name a verb: dump"},
		{[]string{"segment", "dump"}, "name a file"},
		{[]string{"cluster", "status", "--nope"}, "unknown flag: --nope"},
		{[]string{"topic", "list", "--bootstrap"}, "flag needs an argument: --bootstrap"},
		{[]string{"serve", "--s3-path-style=maybe"}, "invalid argument"},
		{[]string{"serve", "extra"}, `unexpected "extra"`},
		{[]string{"version", "--output", "yaml"}, "want text or json"},
		{[]string{"token"}, "name a verb: create, describe, expire, renew"},
		{[]string{"token", "renew"}, "name the token's HMAC"},
		{[]string{"token", "create", "extra"}, `unexpected "extra"`},
	} {
		out, errOut, code := cliRun(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "usage: shale") {
			t.Errorf("shale %q: exit %d, stdout %q, stderr %q (want %q)", c.args, code, out, errOut, c.want)
		}
	}
}

// TestServeBoolFlags: every boolean setting of shale serve is a bare flag
// and takes =true and =false; the values reach the config.
func TestServeBoolFlags(t *testing.T) {
	var bools []string
	serve, _, _ := newServeCmdParts()
	serve.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Value.Type() == "bool" {
			bools = append(bools, f.Name)
		}
	})
	if len(bools) < 3 || !strings.Contains(strings.Join(bools, " "), "s3-path-style") {
		t.Fatalf("bool flags of serve: %v", bools)
	}
	for _, name := range bools {
		for _, form := range []string{"--" + name, "--" + name + "=true", "--" + name + "=false"} {
			if _, err := parseLine([]string{"serve", form, "--data-dir", "d"}); err != nil {
				t.Errorf("serve %s: %v", form, err)
			}
		}
	}
	for _, c := range []struct {
		args []string
		want bool
	}{{[]string{"--s3-path-style"}, true}, {[]string{"--s3-path-style=false"}, false}, {nil, false}} {
		serve, path, flags := newServeCmdParts()
		if err := serve.ParseFlags(c.args); err != nil {
			t.Fatal(err)
		}
		cfg, err := loadConfig(*path, flags)
		if err != nil || cfg.S3PathStyle != c.want {
			t.Errorf("serve %v: s3_path_style %v, %v", c.args, cfg.S3PathStyle, err)
		}
	}
}

// TestDocumentedCommandLines parses every shale command line in README.md
// and docs/*.md with the real flag sets: those in code blocks, and inline
// code that starts with shale and gives a flag (an inline `shale topic`
// names a verb; one with |, [ or ... is a synopsis).
func TestDocumentedCommandLines(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../README.md")
	var lines []docLine
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, docCommandLines(filepath.Base(f), string(b))...)
	}
	// The examples in the commands' own help are documentation too.
	root := newRootCmd()
	for _, c := range allCommands(root) {
		for i, ex := range strings.Split(c.Example, "\n") {
			if ex = strings.TrimSpace(ex); ex != "" {
				lines = append(lines, docLine{c.CommandPath() + " --help example", i + 1, ex})
			}
		}
	}
	seen := map[string]bool{}
	for _, l := range lines {
		args, err := shellWords(l.text)
		if err != nil {
			t.Errorf("%s:%d: %q: %v", l.file, l.line, l.text, err)
			continue
		}
		for _, cmdArgs := range shaleInvocations(args) {
			seen[strings.Join(cmdArgs[:min(2, len(cmdArgs))], " ")] = true
			if _, err := parseLine(cmdArgs); err != nil {
				t.Errorf("%s:%d: shale %s: %v", l.file, l.line, strings.Join(cmdArgs, " "), err)
			}
		}
	}
	// The lines the issue named, so that the test cannot pass on nothing.
	for _, want := range []string{"serve --node-id", "serve --s3-endpoint", "cluster status", "tier status", "replication status", "topic create", "produce quickstart", "consume quickstart"} {
		if !seen[want] {
			t.Errorf("no documented command line starts with shale %q (found %v)", want, seen)
		}
	}
}

type docLine struct {
	file string
	line int
	text string
}

var reInlineCode = regexp.MustCompile("`([^`]+)`")

// docCommandLines returns the candidate command lines of a Markdown file:
// every line of a fenced code block (continuations joined, comments
// dropped), and inline code starting with shale or bin/shale that gives a
// flag and is no synopsis.
func docCommandLines(file, md string) []docLine {
	var out []docLine
	inBlock, cont := false, ""
	contLine := 0
	for i, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			if cont == "" {
				contLine = i + 1
			}
			if strings.HasPrefix(trimmed, "#") && cont == "" {
				continue
			}
			trimmed = strings.TrimPrefix(trimmed, "$ ")
			if c, ok := strings.CutSuffix(trimmed, `\`); ok {
				cont += c + " "
				continue
			}
			if text := cont + trimmed; strings.Contains(text, "shale ") {
				out = append(out, docLine{file, contLine, text})
			}
			cont = ""
			continue
		}
		for _, m := range reInlineCode.FindAllStringSubmatch(line, -1) {
			code := m[1]
			if !strings.HasPrefix(code, "shale ") && !strings.HasPrefix(code, "bin/shale ") {
				continue
			}
			if strings.ContainsAny(code, "|[…") || strings.Contains(code, "...") || !strings.Contains(code, " -") {
				continue
			}
			out = append(out, docLine{file, i + 1, code})
		}
	}
	return out
}

// shellWords splits a POSIX shell line into words and the operators | ; &&
// || > < (as words of their own), honouring quotes and backslashes.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated '")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New(`unterminated "`)
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t':
			flush()
		case strings.IndexByte("|;&<>", c) >= 0:
			flush()
			op := string(c)
			if i+1 < len(s) && (s[i+1] == c) {
				op += string(c)
				i++
			}
			words = append(words, op)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words, nil
}

// shaleInvocations returns the arguments of each shale command in a shell
// line: its pipeline and list stages whose command (after VAR=value
// assignments) is shale or a path ending in /shale, without redirections.
func shaleInvocations(words []string) [][]string {
	var out [][]string
	var stage []string
	end := func() {
		for len(stage) > 0 && strings.Contains(stage[0], "=") && !strings.HasPrefix(stage[0], "-") {
			stage = stage[1:]
		}
		if len(stage) > 0 && (stage[0] == "shale" || strings.HasSuffix(stage[0], "/shale")) {
			out = append(out, stage[1:])
		}
		stage = nil
	}
	for i := 0; i < len(words); i++ {
		switch w := words[i]; w {
		case "|", "||", "&&", ";", "&":
			end()
		case ">", ">>", "<":
			i++ // the file
		default:
			stage = append(stage, w)
		}
	}
	end()
	return out
}

func TestShellWords(t *testing.T) {
	words, err := shellWords(`printf 'k1=hello\nk2=world\n' | X=1 bin/shale produce q --key-separator = -f "%k \"v\"\n" > out && shale tier status`)
	if err != nil {
		t.Fatal(err)
	}
	got := shaleInvocations(words)
	want := [][]string{{"produce", "q", "--key-separator", "=", "-f", `%k "v"\n`}, {"tier", "status"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	lines := docCommandLines("x.md", "a `shale topic` b `shale consume t -o -1` c `shale x [--y]`\n```sh\nshale serve \\\n  --rack r\n# shale nope\n```\n")
	if len(lines) != 2 || lines[0].text != "shale consume t -o -1" || lines[1].text != "shale serve  --rack r" || lines[1].line != 3 {
		t.Fatalf("doc lines %+v", lines)
	}
}

// TestParseLine: the parser the docs test relies on refuses what Execute
// refuses, and flags go anywhere among the arguments ("--" ends them).
func TestParseLine(t *testing.T) {
	for _, bad := range [][]string{{"topic"}, {"topic", "create"}, {"topic", "list", "--nope"}, {"consume", "t", "-o"},
		{"topic", "list", "--output", "yaml"}, {"serve", "--s3-path-style", "false"}, {}} {
		if _, err := parseLine(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	cmd, err := parseLine([]string{"produce", "events", "-H", "a=1", "f1", "-p", "3", "-H", "b=2", "--", "-f2"})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := cmd.Flags().GetStringArray("header")
	p, _ := cmd.Flags().GetInt("partition")
	if strings.Join(cmd.Flags().Args(), " ") != "events f1 -f2" || p != 3 || strings.Join(h, ",") != "a=1,b=2" {
		t.Fatalf("args %q p %d h %q", cmd.Flags().Args(), p, h)
	}
	if _, err := parseLine([]string{"tier", "--help"}); err != nil {
		t.Fatal(err)
	}
}

// TestFlagAliases: the old spellings --json (replication status) and
// --node (an admin address) still work, hidden from the help, and give
// the same output as --output json and --admin.
func TestFlagAliases(t *testing.T) {
	status := `{"node_id":4,"partitions":[{"topic":"t","partition":0,"role":"leader","leader":4,"fetching_from":-1,"replicas":[4],"isr":[4],"followers":[]}],"fetchers":[]}`
	tier := `{"node_id":4,"partitions":[{"topic":"t","partition":0,"log_start_offset":0,"local_log_start_offset":0,"high_watermark":3}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case adminapi.ReplicationStatusPath:
			w.Write([]byte(status))
		case adminapi.TierStatusPath:
			w.Write([]byte(tier))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	for _, pair := range [][2][]string{
		{{"replication", "status", "--admin", srv.URL, "--output", "json"}, {"replication", "status", "--node", srv.URL, "--json"}},
		{{"replication", "status", "--admin", srv.URL}, {"replication", "status", "--node", srv.URL, "--json=false"}},
		{{"tier", "status", "--admin", srv.URL, "--output", "json"}, {"tier", "status", "--node", srv.URL, "--output", "json"}},
	} {
		want := cliOK(t, pair[0]...)
		out, errOut, code := cliRun(t, pair[1]...)
		if code != 0 || out != want || !strings.Contains(errOut, "deprecated") || !strings.Contains(errOut, "--admin") {
			t.Errorf("shale %q: exit %d, stderr %q, stdout\n%s\nwant (as %q)\n%s", pair[1], code, errOut, out, pair[0], want)
		}
	}
	var sts []adminapi.ReplicationStatus
	if err := json.Unmarshal([]byte(cliOK(t, "replication", "status", "--node", srv.URL, "--json")), &sts); err != nil || len(sts) != 1 || sts[0].NodeID != 4 {
		t.Fatalf("--json: %+v %v", sts, err)
	}
	help := cliOK(t, "replication", "status", "--help")
	if strings.Contains(help, "--json") || strings.Contains(help, "--node") || !strings.Contains(help, "--admin") {
		t.Fatalf("aliases shown in help:\n%s", help)
	}
	// SHALE_ADMIN is --admin's default.
	t.Setenv("SHALE_ADMIN", srv.URL)
	if got := cliOK(t, "tier", "status", "--output", "json"); !strings.Contains(got, `"high_watermark": 3`) {
		t.Fatalf("tier status from SHALE_ADMIN:\n%s", got)
	}
}

func TestVersionAndCompletion(t *testing.T) {
	out := cliOK(t, "version")
	if !strings.Contains(out, "github.com/shale-io/shale") || !strings.Contains(out, "go1.") || !strings.Contains(out, "REVISION") {
		t.Fatalf("version:\n%s", out)
	}
	var v buildVersion
	if err := json.Unmarshal([]byte(cliOK(t, "version", "--output", "json")), &v); err != nil || !strings.HasPrefix(v.GoVersion, "go1.") {
		t.Fatalf("version json: %+v %v", v, err)
	}
	if out := cliOK(t, "--version"); !strings.HasPrefix(out, "shale ") {
		t.Fatalf("--version: %q", out)
	}
	for shell, marker := range map[string]string{"bash": "complete -o default -F __start_shale shale", "zsh": "#compdef shale", "fish": "complete -c shale"} {
		var out, errb bytes.Buffer
		if code := run([]string{"completion", shell}, &out, &errb); code != 0 || !strings.Contains(out.String(), marker) {
			t.Errorf("completion %s: exit %d, %q, %d bytes", shell, code, errb.String(), out.Len())
		}
	}
	// Completion of verbs and of --output's values.
	if out := cliOK(t, "__complete", "topic", "de"); !strings.Contains(out, "delete") || !strings.Contains(out, "describe") {
		t.Fatalf("complete topic de:\n%s", out)
	}
	if out := cliOK(t, "__complete", "topic", "list", "--output", ""); !strings.Contains(out, "text") || !strings.Contains(out, "json") {
		t.Fatalf("complete --output:\n%s", out)
	}
}
