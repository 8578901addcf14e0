package waf

import (
	"bytes"
	"mime"
	"strings"

	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	"github.com/corazawaf/coraza/v3/types/variables"
)

// libmodsecurity checks a multipart body strictly (multipart.cc) and
// says so in REQBODY_ERROR and MULTIPART_STRICT_ERROR, which
// ModSecurity's recommended configuration denies on (rules 200002 and
// 200003); Coraza parses with Go's mime/multipart, which accepts what a
// browser never sends. lbd runs the checks itself before Coraza's parser
// and sets the same variables.

// multipartFault is what a strict reading of a multipart body found.
type multipartFault struct {
	reqbody string // an error libmodsecurity refuses the body for ("" none)
	strict  bool   // a shape that sets MULTIPART_STRICT_ERROR
	after   bool   // data after the final boundary (MULTIPART_DATA_AFTER)
}

// checkMultipart reads body as a multipart/* body of contentType; cut
// says the body was cut at SecRequestBodyLimit (the end is not checked).
func checkMultipart(contentType string, body []byte, cut bool) multipartFault {
	var f multipartFault
	media, params, err := mime.ParseMediaType(contentType)
	if err != nil || !strings.HasPrefix(media, "multipart/") || params["boundary"] == "" {
		return f // Coraza's parser reports these itself
	}
	delim := []byte("--" + params["boundary"])
	lines := bytes.SplitAfter(body, []byte("\n"))
	i := 0
	for ; i < len(lines) && !bytes.HasPrefix(lines[i], delim); i++ {
		f.strict = true // a preamble (MULTIPART_DATA_BEFORE)
	}
	final := false
	for i < len(lines) && !final {
		line := lines[i]
		if bytes.HasPrefix(bytes.TrimLeft(line[len(delim):], " \t"), []byte("--")) {
			final = true
			i++
			break
		}
		i = f.part(lines, i+1, delim)
	}
	for ; i < len(lines); i++ {
		if len(bytes.TrimSpace(lines[i])) > 0 {
			f.after, f.strict = true, true
		}
	}
	if !final && !cut && f.reqbody == "" {
		f.reqbody = "Multipart: final boundary missing"
	}
	return f
}

// part checks the part whose header starts at lines[i] and returns the
// index of the next boundary line (or len(lines)).
func (f *multipartFault) part(lines [][]byte, i int, delim []byte) int {
	disposition := false
	for ; i < len(lines); i++ {
		line := lines[i]
		f.checkLineEnd(line)
		h := bytes.TrimRight(line, "\r\n")
		if len(h) == 0 {
			i++
			break
		}
		if h[0] == ' ' || h[0] == '\t' {
			f.strict = true // a folded header (MULTIPART_HEADER_FOLDING)
			continue
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			f.fail("Multipart: invalid part header")
			continue
		}
		if strings.EqualFold(string(bytes.TrimSpace(name)), "Content-Disposition") {
			disposition = true
			v := strings.TrimSpace(string(value))
			if len(v) < 9 || !strings.EqualFold(v[:9], "form-data") {
				f.fail("Multipart: invalid Content-Disposition header")
			}
		}
	}
	if !disposition {
		f.fail("Multipart: part missing Content-Disposition header")
	}
	for ; i < len(lines) && !bytes.HasPrefix(lines[i], delim); i++ {
	}
	if i < len(lines) {
		f.checkLineEnd(lines[i])
	}
	return i
}

// checkLineEnd flags a header or boundary line ended by a bare LF
// (MULTIPART_LF_LINE).
func (f *multipartFault) checkLineEnd(line []byte) {
	if bytes.HasSuffix(line, []byte("\n")) && !bytes.HasSuffix(line, []byte("\r\n")) {
		f.strict = true
	}
}

func (f *multipartFault) fail(msg string) {
	if f.reqbody == "" {
		f.reqbody = msg
	}
	f.strict = true
}

// set records the fault in the transaction's variables.
func (f multipartFault) set(tx plugintypes.TransactionState) {
	one := func(v variables.RuleVariable, value string) {
		if c, ok := tx.Collection(v).(interface{ Set(string) }); ok {
			c.Set(value)
		}
	}
	if f.reqbody != "" {
		one(variables.ReqbodyError, "1")
		one(variables.ReqbodyErrorMsg, f.reqbody)
		one(variables.ReqbodyProcessorError, "1")
		one(variables.ReqbodyProcessorErrorMsg, f.reqbody)
	}
	if f.after {
		one(variables.MultipartDataAfter, "1")
	}
	if f.strict {
		one(variables.MultipartStrictError, "1")
	}
}
