// Package msglog formats lbd's own messages (not the request log): one
// text form close to Pound's "prog: message" line, or one JSON object a
// line for log collectors. Both go through logrus, so every package that
// takes a logrus.FieldLogger writes in the one format chosen at start.
package msglog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
)

// Styles: the values of the MessageFormat directive and of --message-format.
const (
	Text = "text"
	JSON = "json"
)

// Source fields: what a message is about. They are set with WithFields
// by the code that knows the source; JSON lines carry them as keys.
const (
	Listener = "listener"
	Service  = "service"
	Backend  = "backend"
	Config   = "config" // "file:line" of the configuration statement
)

// sourceKeys are the source fields in the order JSON lines give them,
// after time, level and msg.
var sourceKeys = []string{Listener, Service, Backend, Config}

func isSource(k string) bool {
	for _, s := range sourceKeys {
		if k == s {
			return true
		}
	}
	return false
}

// Valid tells whether s names a style (case-insensitive, as directives).
func Valid(s string) bool {
	s = strings.ToLower(s)
	return s == Text || s == JSON
}

// New returns the formatter of style (Text when unknown or empty) for
// program prog ("lbd", "pound", "zproxy").
func New(style, prog string) logrus.Formatter {
	if strings.EqualFold(style, JSON) {
		return JSONFormatter{}
	}
	// Run as pound, lines keep Pound's exact wording: no fields appended.
	return TextFormatter{Prefix: prog + ": ", HideSources: prog == "pound"}
}

// ConfigPos formats a configuration position as the Config field wants it.
func ConfigPos(file string, line int) string {
	return file + ":" + strconv.Itoa(line)
}

// TextFormatter prints "prefix message k=v ...", Pound's stderr form with
// any other fields appended in key order. A source field whose value the
// message already names is not repeated, so a line that says
// "Backend 127.0.0.1:80 dead" reads as it always did.
type TextFormatter struct {
	Prefix string
	// HideSources drops the source fields altogether (run as pound).
	HideSources bool
}

// Format implements logrus.Formatter.
func (f TextFormatter) Format(e *logrus.Entry) ([]byte, error) {
	b := append([]byte(f.Prefix), e.Message...)
	for _, k := range sortedKeys(e.Data) {
		v := fmt.Sprint(e.Data[k])
		if isSource(k) && (f.HideSources || v == "" || containsWord(e.Message, v)) {
			continue
		}
		b = fmt.Appendf(b, " %s=%s", k, v)
	}
	return append(b, '\n'), nil
}

// containsWord tells whether v appears in msg as a whole word: not inside
// a longer name or number ("app" is not in "applied", 127.0.0.1:80 not
// in 127.0.0.1:8080), so a source is only left out when the text
// really names it.
func containsWord(msg, v string) bool {
	for i := 0; ; {
		j := strings.Index(msg[i:], v)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(v)
		if (start == 0 || !wordByte(msg[start-1])) && (end == len(msg) || !wordByte(msg[end])) {
			return true
		}
		i = start + 1
	}
}

func wordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// JSONFormatter prints one JSON object a line:
// {"time":…,"level":…,"msg":…,"listener":…,"service":…,"backend":…,"config":…}
// with the source fields present only when set, then any other field in
// key order. The key order is fixed so that lines diff and grep well.
type JSONFormatter struct{}

// Format implements logrus.Formatter.
func (JSONFormatter) Format(e *logrus.Entry) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"time":`)
	writeJSON(&b, e.Time.UTC().Format(time.RFC3339Nano))
	b.WriteString(`,"level":`)
	writeJSON(&b, levelName(e.Level))
	b.WriteString(`,"msg":`)
	writeJSON(&b, e.Message)
	for _, k := range sourceKeys {
		if v, ok := e.Data[k]; ok && fmt.Sprint(v) != "" {
			field(&b, k, v)
		}
	}
	for _, k := range sortedKeys(e.Data) {
		if !isSource(k) {
			field(&b, k, e.Data[k])
		}
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

func field(b *bytes.Buffer, k string, v any) {
	b.WriteByte(',')
	writeJSON(b, k)
	b.WriteByte(':')
	if err, ok := v.(error); ok {
		v = err.Error()
	}
	writeJSON(b, v)
}

// writeJSON encodes v, or its fmt form when it has no JSON encoding (a
// channel, a func): a message is never lost to its field.
func writeJSON(b *bytes.Buffer, v any) {
	js, err := json.Marshal(v)
	if err != nil {
		js, _ = json.Marshal(fmt.Sprint(v)) // a string always encodes
	}
	b.Write(js)
}

// levelName is the short, lower-case name collectors expect.
func levelName(l logrus.Level) string {
	if l == logrus.WarnLevel {
		return "warn"
	}
	return l.String()
}

func sortedKeys(d logrus.Fields) []string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
