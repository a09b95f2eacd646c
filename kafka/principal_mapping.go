package kafka

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrPrincipalMapping: ssl.principal.mapping.rules that do not parse, or a
// certificate subject that no rule maps (its client fails to authenticate,
// as in Kafka).
var ErrPrincipalMapping = errors.New("kafka: ssl.principal.mapping.rules")

// SSLPrincipalMapper is Kafka's ssl.principal.mapping.rules (KIP-371): an
// ordered list of rules, each DEFAULT (the subject as it is) or
// RULE:pattern/replacement/ with an optional L or U (lower or upper case the
// result); the first rule whose pattern matches the whole subject names
// the principal. Patterns are Go regular expressions (RE2; Kafka's are
// Java's, and the two agree on the rules Kafka documents), replacements
// use Java's $1 and \ escapes. It is immutable and safe for concurrent use;
// the nil mapper is DEFAULT alone.
type SSLPrincipalMapper struct {
	rules []principalRule
}

type principalRule struct {
	deflt       bool
	match       *regexp.Regexp // the pattern, anchored: it must match the whole subject
	find        *regexp.Regexp // the pattern as written, for the replacement
	replacement string         // as a Go Expand template; "" keeps the subject
	lower       bool
	upper       bool
	text        string
}

// Kafka's grammar of the rules (SslPrincipalMapper.RULE_PATTERN and
// RULE_SPLITTER), unchanged: RE2 takes it as Java does.
const principalRulePattern = `(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	principalRuleSplitter = regexp.MustCompile(`\s*(` + principalRulePattern + `)\s*(,\s*|$)`)
	principalRuleParser   = regexp.MustCompile(`^(?:` + principalRulePattern + `)`)
)

// ParseSSLPrincipalMappingRules parses rules as Kafka does: comma-separated
// (a comma inside a RULE's pattern or replacement stays part of it), blank
// entries ignored; empty rules are DEFAULT alone.
func ParseSSLPrincipalMappingRules(rules string) (*SSLPrincipalMapper, error) {
	m := &SSLPrincipalMapper{}
	for _, sm := range principalRuleSplitter.FindAllStringSubmatch(strings.TrimSpace(rules), -1) {
		text := strings.TrimSpace(sm[1])
		loc := principalRuleParser.FindStringSubmatchIndex(text)
		if loc == nil || loc[1] != len(text) {
			return nil, fmt.Errorf("%w: invalid rule %q", ErrPrincipalMapping, text)
		}
		group := func(i int) (string, bool) {
			if loc[2*i] < 0 {
				return "", false
			}
			return text[loc[2*i]:loc[2*i+1]], true
		}
		if _, ok := group(1); ok {
			m.rules = append(m.rules, principalRule{deflt: true, text: text})
			continue
		}
		pat, ok := group(2)
		if !ok {
			continue // an empty entry
		}
		repl, _ := group(4)
		flag, _ := group(6)
		find, err := regexp.Compile(pat)
		if err != nil {
			return nil, fmt.Errorf("%w: rule %q: %v", ErrPrincipalMapping, text, err)
		}
		tmpl, err := javaReplacement(repl, find.NumSubexp())
		if err != nil {
			return nil, fmt.Errorf("%w: rule %q: %v", ErrPrincipalMapping, text, err)
		}
		m.rules = append(m.rules, principalRule{
			match: regexp.MustCompile(`^(?:` + pat + `)$`), find: find, replacement: tmpl,
			lower: flag == "L", upper: flag == "U", text: text,
		})
	}
	if len(m.rules) == 0 {
		m.rules = []principalRule{{deflt: true, text: "DEFAULT"}}
	}
	return m, nil
}

// Name maps a certificate subject (an RFC 2253 name, CN=app,O=payments) to
// the principal's name, or ErrPrincipalMapping when no rule matches.
func (m *SSLPrincipalMapper) Name(subject string) (string, error) {
	if m == nil {
		return subject, nil
	}
	for _, r := range m.rules {
		if r.deflt {
			return subject, nil
		}
		if !r.match.MatchString(subject) {
			continue
		}
		out := subject
		if r.replacement != "" {
			out = r.find.ReplaceAllString(subject, r.replacement)
		}
		switch {
		case r.lower:
			out = strings.ToLower(out)
		case r.upper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("%w: no rule applies to %s", ErrPrincipalMapping, subject)
}

// javaReplacement turns a java.util.regex replacement ($1, ${name}, \x for
// a literal x) into a Go Expand template. Like Java, $ takes as many digits
// as still name a group of the pattern's groups.
func javaReplacement(repl string, groups int) (string, error) {
	var b strings.Builder
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch {
		case c == '\\':
			if i+1 == len(repl) {
				return "", errors.New("replacement ends with a backslash")
			}
			i++
			if repl[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(repl[i])
			}
		case c == '$' && i+1 < len(repl) && repl[i+1] == '{':
			end := strings.IndexByte(repl[i:], '}')
			if end < 0 {
				return "", errors.New("unterminated ${ in the replacement")
			}
			b.WriteString(repl[i : i+end+1])
			i += end
		case c == '$':
			if i+1 == len(repl) || repl[i+1] < '0' || repl[i+1] > '9' {
				return "", errors.New("a $ without a group in the replacement")
			}
			n, j := int(repl[i+1]-'0'), i+2
			for j < len(repl) && repl[j] >= '0' && repl[j] <= '9' && n*10+int(repl[j]-'0') <= groups {
				n, j = n*10+int(repl[j]-'0'), j+1
			}
			if n > groups {
				return "", fmt.Errorf("no group %d in the pattern", n)
			}
			fmt.Fprintf(&b, "${%d}", n)
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// String is the rules, as parsed.
func (m *SSLPrincipalMapper) String() string {
	if m == nil {
		return "DEFAULT"
	}
	var parts []string
	for _, r := range m.rules {
		parts = append(parts, r.text)
	}
	return strings.Join(parts, ", ")
}
