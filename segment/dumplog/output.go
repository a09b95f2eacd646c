package dumplog

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"
)

// output writes either kafka-dump-log style text or JSON. JSON objects are
// streamed: a file's arrays are written element by element, so a dump's
// memory does not grow with the file.
type output struct {
	w    io.Writer
	json bool
	err  error // first write error; later writes are skipped

	// JSON streaming state: whether the current array has an element yet.
	first bool
}

func (o *output) printf(format string, args ...any) {
	if o.err == nil {
		_, o.err = fmt.Fprintf(o.w, format, args...)
	}
}

// jsonValue writes v as JSON (no newline).
func (o *output) jsonValue(v any) {
	if o.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		o.err = err
		return
	}
	_, o.err = o.w.Write(b)
}

// beginObject starts a file's JSON object with its leading fields; the
// caller then opens arrays with beginArray and closes with endObject.
func (o *output) beginObject(fields ...any) {
	o.printf("{")
	for i := 0; i < len(fields); i += 2 {
		if i > 0 {
			o.printf(",")
		}
		o.jsonValue(fields[i])
		o.printf(":")
		o.jsonValue(fields[i+1])
	}
}

func (o *output) beginArray(name string) {
	o.printf(",")
	o.jsonValue(name)
	o.printf(":[")
	o.first = true
}

func (o *output) element(v any) {
	if !o.first {
		o.printf(",")
	}
	o.first = false
	o.jsonValue(v)
}

func (o *output) endArray() { o.printf("]") }

// field adds one more field to the open object.
func (o *output) field(name string, v any) {
	o.printf(",")
	o.jsonValue(name)
	o.printf(":")
	o.jsonValue(v)
}

func (o *output) endObject() { o.printf("}\n") }

func (o *output) ignored(path string) {
	if o.json {
		o.beginObject("file", path, "kind", "unknown")
		o.endObject()
		return
	}
	o.printf("Ignoring unknown file %s\n", path)
}

// printable reports whether b reads well as text: valid UTF-8 without
// control characters other than tab.
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if r != '\t' && !unicode.IsPrint(r) && !unicode.IsSpace(r) || r == '\n' || r == '\r' {
			return false
		}
	}
	return true
}

// showBytes renders a key, value or header value for text output: the text
// itself when printable, else 0x and hex. Null is "null".
func showBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	if printable(b) {
		return string(b)
	}
	return "0x" + hex.EncodeToString(b)
}

// jsonBytes renders bytes for JSON: a string and its encoding ("utf8" or
// "hex"); null gives nil and "".
func jsonBytes(b []byte) (*string, string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, "utf8"
	}
	s := hex.EncodeToString(b)
	return &s, "hex"
}
