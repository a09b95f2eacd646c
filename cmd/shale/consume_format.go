package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recordFormatter appends one record's text to a buffer.
type recordFormatter func(*bytes.Buffer, *kgo.Record) error

// defaultFormat prints each value on its own line.
const defaultFormat = `%v\n`

// newFormatter compiles a --format. A format containing "{{" is a Go
// text/template over templateRecord; otherwise it is a kcat/rpk-style
// string of literal text and % verbs:
//
//	%t topic        %p partition    %o offset       %e leader epoch
//	%k key          %K key length   %v or %s value  %V or %S value length
//	%T timestamp (ms since the epoch)               %d timestamp (RFC 3339, UTC)
//	%h headers as k=v,k=v           %H header count %% a percent sign
//
// In both kinds the escapes \n, \t, \r, \0 and \\ are interpreted, and
// nothing is added: end the format with \n for one record per line.
func newFormatter(spec string) (recordFormatter, error) {
	spec = unescape(spec)
	if strings.Contains(spec, "{{") {
		tmpl, err := template.New("format").Parse(spec)
		if err != nil {
			return nil, fmt.Errorf("%w: --format template: %v", errUsage, err)
		}
		return func(b *bytes.Buffer, r *kgo.Record) error {
			return tmpl.Execute(b, newTemplateRecord(r))
		}, nil
	}
	var parts []func(*bytes.Buffer, *kgo.Record)
	lit := func(s string) func(*bytes.Buffer, *kgo.Record) {
		return func(b *bytes.Buffer, _ *kgo.Record) { b.WriteString(s) }
	}
	for len(spec) > 0 {
		i := strings.IndexByte(spec, '%')
		if i < 0 {
			parts = append(parts, lit(spec))
			break
		}
		if i > 0 {
			parts = append(parts, lit(spec[:i]))
		}
		if i+1 >= len(spec) {
			return nil, fmt.Errorf("%w: --format ends with a lone %%", errUsage)
		}
		verb, ok := formatVerbs[spec[i+1]]
		if !ok {
			return nil, fmt.Errorf("%w: --format: unknown verb %%%c", errUsage, spec[i+1])
		}
		parts = append(parts, verb)
		spec = spec[i+2:]
	}
	return func(b *bytes.Buffer, r *kgo.Record) error {
		for _, p := range parts {
			p(b, r)
		}
		return nil
	}, nil
}

var formatVerbs = map[byte]func(*bytes.Buffer, *kgo.Record){
	't': func(b *bytes.Buffer, r *kgo.Record) { b.WriteString(r.Topic) },
	'p': func(b *bytes.Buffer, r *kgo.Record) { b.WriteString(strconv.Itoa(int(r.Partition))) },
	'o': func(b *bytes.Buffer, r *kgo.Record) { b.WriteString(strconv.FormatInt(r.Offset, 10)) },
	'e': func(b *bytes.Buffer, r *kgo.Record) { b.WriteString(strconv.Itoa(int(r.LeaderEpoch))) },
	'k': func(b *bytes.Buffer, r *kgo.Record) { b.Write(r.Key) },
	'K': func(b *bytes.Buffer, r *kgo.Record) { b.WriteString(strconv.Itoa(len(r.Key))) },
	'v': func(b *bytes.Buffer, r *kgo.Record) { b.Write(r.Value) },
	's': func(b *bytes.Buffer, r *kgo.Record) { b.Write(r.Value) },
	'V': func(b *bytes.Buffer, r *kgo.Record) { b.WriteString(strconv.Itoa(len(r.Value))) },
	'S': func(b *bytes.Buffer, r *kgo.Record) { b.WriteString(strconv.Itoa(len(r.Value))) },
	'T': func(b *bytes.Buffer, r *kgo.Record) { b.WriteString(strconv.FormatInt(r.Timestamp.UnixMilli(), 10)) },
	'd': func(b *bytes.Buffer, r *kgo.Record) { b.WriteString(r.Timestamp.UTC().Format(time.RFC3339Nano)) },
	'h': func(b *bytes.Buffer, r *kgo.Record) {
		for i, h := range r.Headers {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(h.Key)
			b.WriteByte('=')
			b.Write(h.Value)
		}
	},
	'H': func(b *bytes.Buffer, r *kgo.Record) { b.WriteString(strconv.Itoa(len(r.Headers))) },
	'%': func(b *bytes.Buffer, _ *kgo.Record) { b.WriteByte('%') },
}

// unescape interprets \n, \t, \r, \0 and \\; other backslashes stay.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '0':
			b.WriteByte(0)
		case '\\':
			b.WriteByte('\\')
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// templateRecord is what a Go-template --format sees, for example
// '{{.Partition}}:{{.Offset}} {{.Key}}={{.Value}} {{index .Headers "trace"}}\n'.
type templateRecord struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Key         string
	Value       string
	Timestamp   time.Time
	Headers     map[string]string // the last value of each key
	HeaderList  []recordHeader    // every header, in order
}

type recordHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func newTemplateRecord(r *kgo.Record) templateRecord {
	t := templateRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, LeaderEpoch: r.LeaderEpoch,
		Key: string(r.Key), Value: string(r.Value), Timestamp: r.Timestamp, Headers: map[string]string{}}
	for _, h := range r.Headers {
		t.Headers[h.Key] = string(h.Value)
		t.HeaderList = append(t.HeaderList, recordHeader{Key: h.Key, Value: string(h.Value)})
	}
	return t
}

// jsonRecord is one line of `shale consume --output json`. Key and value are
// strings (bytes that are not UTF-8 become U+FFFD); a null key stays null.
type jsonRecord struct {
	Topic       string         `json:"topic"`
	Partition   int32          `json:"partition"`
	Offset      int64          `json:"offset"`
	LeaderEpoch int32          `json:"leader_epoch"`
	Timestamp   int64          `json:"timestamp"`
	Key         *string        `json:"key"`
	Value       *string        `json:"value"`
	Headers     []recordHeader `json:"headers"`
}

// appendJSONRecord writes r as one line of JSON.
func appendJSONRecord(b *bytes.Buffer, r *kgo.Record) error {
	j := jsonRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, LeaderEpoch: r.LeaderEpoch,
		Timestamp: r.Timestamp.UnixMilli(), Headers: []recordHeader{}}
	if r.Key != nil {
		k := string(r.Key)
		j.Key = &k
	}
	if r.Value != nil {
		v := string(r.Value)
		j.Value = &v
	}
	for _, h := range r.Headers {
		j.Headers = append(j.Headers, recordHeader{Key: h.Key, Value: string(h.Value)})
	}
	return json.NewEncoder(b).Encode(j)
}
