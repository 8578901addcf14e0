package proxy

import "strings"

// LogProgram is a compiled Pound 4 request log format (LogFormat "name"
// "fmt"). Compiling once at load turns the format into a list of
// operations, so writing a line is a loop of appends with no parsing
// and no allocation.
type LogProgram struct {
	Name string
	ops  []logOp
}

// logKind is one format specifier (src/log.c http_log_spec[]).
type logKind uint8

const (
	lkText          logKind = iota // literal text
	lkForwardedIP                  // %a: client address, anonymised
	lkLocalIP                      // %A
	lkBytes                        // %B
	lkBytesCLF                     // %b: "-" for 0
	lkMillis                       // %D (Pound prints milliseconds)
	lkRemoteIP                     // %h
	lkProto                        // %H: http or https
	lkHeader                       // %{Name}i
	lkHeaderCLF                    // %{Name}I: "-" when absent
	lkBackendName                  // %{backend}N
	lkServiceName                  // %{service}N
	lkListenerName                 // %{listener}N
	lkBackendLocus                 // %{backend}L
	lkServiceLocus                 // %{service}L
	lkListenerLocus                // %{listener}L
	lkWAF                          // %{waf}N: the WAF verdict (an lbd extension)
	lkGRPC                         // %{grpc}N: the response's grpc-status (an lbd extension)
	lkMethod                       // %m
	lkPort                         // %p
	lkPID                          // %P
	lkQuery                        // %q
	lkRequest                      // %r
	lkStatus                       // %s
	lkStatusLine                   // %>s
	lkTimeCLF                      // %t: [02/Jan/2006:15:04:05 -0700]
	lkTimeFmt                      // %{strftime}t
	lkTimeSec                      // %{s}t
	lkTimeMsec                     // %{msec}t
	lkTimeUsec                     // %{usec}t
	lkTimeMsecFrac                 // %{msec_frac}t
	lkTimeUsecFrac                 // %{usec_frac}t
	lkProcSec                      // %T, %{s}T
	lkProcFrac                     // %{f}T: 0.012
	lkProcMs                       // %{ms}T
	lkProcUs                       // %{us}T
	lkUser                         // %u
	lkPath                         // %U
	lkVHost                        // %v
)

// logOp is one compiled step. text is the literal or header name; end
// selects the end-of-request clock for %t forms; tf is a compiled
// strftime format.
type logOp struct {
	kind logKind
	text string
	end  bool
	tf   []timePart
}

// The canned formats of Pound 4 (src/config.c canned_log_format[]),
// indexed by LogLevel.
var builtinFormats = [...]string{
	LogNull:          "",
	LogRegular:       "%a %r - %>s",
	LogExtended:      "%a %r - %>s (%{Host}i/%{service}N -> %{backend}N) %{f}T sec",
	LogVhostCombined: "%v:%p %a %l %u %t \"%r\" %s %b \"%{Referer}i\" \"%{User-Agent}i\"",
	LogCombined:      "%a %l %u %t \"%r\" %s %b \"%{Referer}i\" \"%{User-Agent}i\"",
	LogDetailed: "%v:%p %a %l %u %t \"%r\" %s %b \"%{Referer}i\" \"%{User-Agent}i\"" +
		" (%{service}N -> %{backend}N) %{f}T sec",
}

var builtinNames = [...]string{"null", "regular", "extended", "vhost_combined", "combined", "detailed"}

// builtinPrograms are the canned formats, compiled once.
var builtinPrograms = func() (p [len(builtinFormats)]*LogProgram) {
	for i, f := range builtinFormats {
		prog, err := CompileLogFormat(builtinNames[i], f)
		if err != nil {
			panic(err)
		}
		p[i] = prog
	}
	return p
}()

// BuiltinLogProgram returns the compiled canned format f.
func BuiltinLogProgram(f LogFormat) *LogProgram {
	if int(f) < 0 || int(f) >= len(builtinPrograms) {
		return builtinPrograms[LogRegular]
	}
	return builtinPrograms[f]
}

// LogFormatError describes a bad LogFormat; Offset is the byte offset
// of the offending specifier, as Pound reports it.
type LogFormatError struct {
	Msg    string
	Offset int
}

func (e *LogFormatError) Error() string { return e.Msg }

// CompileLogFormat compiles a Pound log format. Like Pound it keeps
// going after a recoverable mistake (unknown specifier, missing brace:
// the text is printed verbatim) but still returns the first error, so
// the caller can refuse or warn; a specifier missing its required
// argument makes the format unusable (nil program).
func CompileLogFormat(name, format string) (*LogProgram, error) {
	p := &LogProgram{Name: name}
	var first error
	note := func(msg string, off int) {
		if first == nil {
			first = &LogFormatError{Msg: msg, Offset: off}
		}
	}
	cur := 0
	for {
		i := strings.IndexByte(format[cur:], '%')
		if i < 0 {
			break
		}
		p.text(format[cur : cur+i])
		next, fatal := p.spec(format, cur+i, note)
		if fatal {
			return nil, first
		}
		cur = next
	}
	p.text(format[cur:])
	return p, first
}

func (p *LogProgram) text(s string) {
	if s == "" {
		return
	}
	if n := len(p.ops); n > 0 && p.ops[n-1].kind == lkText {
		p.ops[n-1].text += s
		return
	}
	p.ops = append(p.ops, logOp{kind: lkText, text: s})
}

// specArg tells whether a specifier takes a {argument}.
type specArg uint8

const (
	argNone specArg = iota
	argRequired
	argOptional
)

// simpleSpecs are the specifiers whose meaning does not depend on the
// argument.
var simpleSpecs = map[byte]struct {
	kind logKind
	arg  specArg
}{
	'a': {lkForwardedIP, argNone}, 'A': {lkLocalIP, argNone},
	'B': {lkBytes, argNone}, 'b': {lkBytesCLF, argNone},
	'D': {lkMillis, argNone}, 'h': {lkRemoteIP, argNone},
	'H': {lkProto, argNone}, 'i': {lkHeader, argRequired},
	'I': {lkHeaderCLF, argRequired}, 'l': {lkText, argNone},
	'm': {lkMethod, argNone}, 'p': {lkPort, argNone},
	'P': {lkPID, argNone}, 'q': {lkQuery, argNone},
	'r': {lkRequest, argNone}, 'u': {lkUser, argNone},
	'U': {lkPath, argNone}, 'v': {lkVHost, argNone},
	's': {lkStatus, argOptional}, 't': {lkTimeCLF, argOptional},
	'T': {lkProcSec, argOptional}, 'N': {lkBackendName, argRequired},
	'L': {lkBackendLocus, argRequired}, '%': {lkText, argNone},
}

// spec compiles the specifier starting at format[at] ('%') and returns
// where the text resumes. fatal means the format cannot be used.
func (p *LogProgram) spec(format string, at int, note func(string, int)) (next int, fatal bool) {
	i := at + 1
	arg, hasArg := "", false
	switch {
	case i+1 < len(format) && format[i] == '>' && format[i+1] == 's':
		arg, hasArg = "1", true
		i++
	case i < len(format) && format[i] == '{':
		end := strings.IndexByte(format[i+1:], '}')
		if end < 0 {
			note("missing terminating `}'", i)
			p.text(format[at : i+1])
			return i + 1, false
		}
		arg, hasArg = format[i+1:i+1+end], true
		i += end + 2
	}
	if i >= len(format) {
		note("unknown format char", i)
		p.text(format[at:])
		return len(format), false
	}
	s, ok := simpleSpecs[format[i]]
	if !ok {
		note("unknown format char", i)
		p.text(format[at : i+1])
		return i + 1, false
	}
	if s.arg == argRequired && !hasArg {
		note("format specifier requires argument", i)
		return 0, true
	}
	if s.arg == argNone {
		arg, hasArg = "", false // Pound warns and ignores the argument
	}
	if err := p.add(format[i], s.kind, arg, hasArg); err != "" {
		note(err, i)
		return 0, true
	}
	return i + 1, false
}

// add appends the operation for specifier c.
func (p *LogProgram) add(c byte, kind logKind, arg string, hasArg bool) string {
	switch c {
	case '%':
		p.text("%")
	case 'l':
		p.text("-")
	case 's':
		if hasArg {
			kind = lkStatusLine
		}
		p.ops = append(p.ops, logOp{kind: kind})
	case 'i', 'I':
		p.ops = append(p.ops, logOp{kind: kind, text: arg})
	case 'N', 'L':
		if arg == "waf" && c == 'N' {
			p.ops = append(p.ops, logOp{kind: lkWAF})
			break
		}
		if arg == "grpc" && c == 'N' {
			p.ops = append(p.ops, logOp{kind: lkGRPC})
			break
		}
		k, ok := objectKind(arg, c == 'L')
		if !ok {
			return "unrecognized Pound object name"
		}
		p.ops = append(p.ops, logOp{kind: k})
	case 'T':
		k, ok := procTimeKind(arg, hasArg)
		if !ok {
			return "bad process time format"
		}
		p.ops = append(p.ops, logOp{kind: k})
	case 't':
		p.ops = append(p.ops, timeOp(arg, hasArg))
	default:
		p.ops = append(p.ops, logOp{kind: kind})
	}
	return ""
}

func objectKind(arg string, locus bool) (logKind, bool) {
	var k logKind
	switch arg {
	case "backend":
		k = lkBackendName
	case "service":
		k = lkServiceName
	case "listener":
		k = lkListenerName
	default:
		return 0, false
	}
	if locus {
		k += lkBackendLocus - lkBackendName
	}
	return k, true
}

func procTimeKind(arg string, hasArg bool) (logKind, bool) {
	if !hasArg {
		return lkProcSec, true
	}
	switch arg {
	case "s":
		return lkProcSec, true
	case "f":
		return lkProcFrac, true
	case "ms":
		return lkProcMs, true
	case "us":
		return lkProcUs, true
	}
	return 0, false
}

// timeOp compiles %t and %{[begin:|end:]format}t (src/log.c p_time).
func timeOp(arg string, hasArg bool) logOp {
	op := logOp{kind: lkTimeCLF}
	if !hasArg {
		return op
	}
	if rest, ok := strings.CutPrefix(arg, "begin:"); ok {
		arg = rest
	} else if rest, ok := strings.CutPrefix(arg, "end:"); ok {
		arg, op.end = rest, true
	}
	switch arg {
	case "":
	case "s":
		op.kind = lkTimeSec
	case "msec":
		op.kind = lkTimeMsec
	case "usec":
		op.kind = lkTimeUsec
	case "msec_frac":
		op.kind = lkTimeMsecFrac
	case "usec_frac":
		op.kind = lkTimeUsecFrac
	default:
		op.kind, op.tf = lkTimeFmt, compileStrftime(arg)
	}
	return op
}
