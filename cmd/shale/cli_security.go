package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shale-io/shale/sdk"
)

// clientSecurity is how a Kafka verb reaches a TLS or SASL listener: Kafka
// client properties (security.protocol, sasl.*, ssl.*, as sdk.ClientConfig
// reads them) from --command-config FILE (Java properties, as Kafka's
// tools take) and -X key=value (repeatable, as kcat and rpk). -X wins over
// the file, the file over the environment, which gives only the password
// ($SHALE_SASL_PASSWORD, when neither sasl.password nor sasl.jaas.config
// is set).
type clientSecurity struct {
	file  string
	props []string
}

const saslPasswordEnv = "SHALE_SASL_PASSWORD"

func addClientSecurity(cmd *cobra.Command) *clientSecurity {
	s := &clientSecurity{}
	cmd.Flags().StringVar(&s.file, "command-config", os.Getenv("SHALE_COMMAND_CONFIG"),
		"Kafka client properties file: security.protocol, sasl.mechanism, sasl.username, sasl.password, ssl.ca.location, ... (env SHALE_COMMAND_CONFIG)")
	cmd.Flags().StringArrayVarP(&s.props, "client-property", "X", nil,
		"Kafka client property key=value, repeatable; wins over --command-config (password fallback: env "+saslPasswordEnv+")")
	return s
}

// properties merges the file, -X and the environment.
func (s *clientSecurity) properties() (map[string]string, error) {
	props := map[string]string{}
	if s.file != "" {
		f, err := os.Open(s.file)
		if err != nil {
			return nil, usagef("--command-config: %v", err)
		}
		defer f.Close()
		if props, err = readProperties(f); err != nil {
			return nil, usagef("--command-config %s: %v", s.file, err)
		}
	}
	for _, kv := range s.props {
		k, v, err := splitKV(kv)
		if err != nil {
			return nil, usagef("-X: %q is not key=value", keyOnly(kv))
		}
		props[strings.TrimSpace(k)] = v
	}
	_, pw := props["sasl.password"]
	_, jaas := props["sasl.jaas.config"]
	if env := os.Getenv(saslPasswordEnv); env != "" && !pw && !jaas &&
		strings.HasPrefix(strings.ToUpper(props["security.protocol"]), "SASL_") {
		props["sasl.password"] = env
	}
	return props, nil
}

// keyOnly is the part of a -X argument that may be shown: not a value.
func keyOnly(kv string) string {
	k, _, _ := strings.Cut(kv, "=")
	return k
}

// options are the SDK options the properties ask for.
func (s *clientSecurity) options() ([]sdk.Option, error) {
	props, err := s.properties()
	if err != nil {
		return nil, err
	}
	opts, err := sdk.ClientConfig(props)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return opts, nil
}

// readProperties reads a Java properties file: key=value, key:value or
// key value lines; # and ! comments; a trailing backslash continues the
// line; \t \n \r \\ \= \: escapes. A later key wins.
func readProperties(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var logical string
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if logical == "" && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if trailingBackslashes(line)%2 == 1 {
			logical += line[:len(line)-1]
			continue
		}
		logical += line
		k, v := splitProperty(logical)
		logical = ""
		if k == "" {
			return nil, fmt.Errorf("line %d: no key", n)
		}
		out[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if logical != "" {
		k, v := splitProperty(logical)
		out[k] = v
	}
	return out, nil
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

// splitProperty splits a logical line at the first unescaped '=', ':' or
// blank, and unescapes both sides.
func splitProperty(line string) (string, string) {
	i := 0
	for ; i < len(line); i++ {
		if line[i] == '\\' {
			i++
			continue
		}
		if line[i] == '=' || line[i] == ':' || line[i] == ' ' || line[i] == '\t' {
			break
		}
	}
	key := line[:min(i, len(line))]
	rest := strings.TrimLeft(line[min(i, len(line)):], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return unescapeProperty(key), unescapeProperty(rest)
}

func unescapeProperty(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i == len(s)-1 {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
