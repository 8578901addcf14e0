// Command gen writes the WAF differential corpus, one JSON request a line:
//
//	go run ./testdata/waf/gen > testdata/waf/corpus.jsonl
//
// The corpus is data: functional-tests/waf_diff_test.go sends every entry,
// byte for byte the same, to nginx+libmodsecurity and to lbd+Coraza and
// compares their verdicts. No verdict is stored here on purpose: the
// expected answer is whatever libmodsecurity says, so the corpus holds
// attacks of every CRS category next to ordinary browser and API traffic
// (the false positives matter as much as the detections).
//
// The payloads are written for this corpus; they are kept in Go rather
// than typed into the JSON so that each one can be placed in several parts
// of a request (query, form, multipart, JSON, cookie, header) without
// hand-escaping.
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"unicode/utf8"
)

// entry is one corpus line. Headers keep their order and spelling; the
// runner adds Content-Length (when there is a body and neither it nor
// Transfer-Encoding is given) and Connection: close, nothing else.
type entry struct {
	ID       string      `json:"id"`
	Category string      `json:"category"`
	Note     string      `json:"note,omitempty"`
	Method   string      `json:"method"`
	Path     string      `json:"path"`
	Proto    string      `json:"proto,omitempty"` // default HTTP/1.1
	Headers  [][2]string `json:"headers"`
	Body     string      `json:"body,omitempty"`
	BodyB64  string      `json:"body_b64,omitempty"` // for bodies that are not UTF-8
}

// corpus collects entries and numbers them per category.
type corpus struct {
	entries []entry
	seq     map[string]int
}

// add appends e with an id of category-location-number.
func (c *corpus) add(e entry, loc string) {
	c.seq[e.Category]++
	e.ID = fmt.Sprintf("%s-%s-%03d", e.Category, loc, c.seq[e.Category])
	if e.Body != "" && !utf8.ValidString(e.Body) {
		e.BodyB64 = base64.StdEncoding.EncodeToString([]byte(e.Body))
		e.Body = ""
	}
	c.entries = append(c.entries, e)
}

func main() {
	c := &corpus{seq: map[string]int{}}
	addAttacks(c)
	addProtocol(c)
	addBenign(c)
	w := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // keep <, > and & readable in the file
	seen := map[string]bool{}
	for _, e := range c.entries {
		if seen[e.ID] {
			fmt.Fprintln(os.Stderr, "duplicate id", e.ID)
			os.Exit(1)
		}
		seen[e.ID] = true
		if err := enc.Encode(e); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "%d entries\n", len(c.entries))
}
