package http1

// Character classes, one 256-entry table so that every byte test on the hot
// path is a single load and mask (no branches on ranges, no allocation).
const (
	cToken  uint8 = 1 << iota // RFC 9110 tchar: method, header names, codings
	cValue                    // field-vchar, obs-text, SP, HTAB: header values
	cTarget                   // request-target bytes: 0x21-0x7E except '#' (HAProxy default)
	cHost                     // reg-name / IPv4 bytes of a Host (unreserved, sub-delims, '%')
	cHex                      // HEXDIG
	cDigit                    // DIGIT
	cExt                      // chunk-ext bytes: VCHAR, obs-text, SP, HTAB (quoted strings included)
)

var charClass [256]uint8

// lowerTab maps ASCII upper case to lower case and leaves every other byte
// alone, for case-insensitive compares that neither allocate nor mistake a
// non-letter for a letter.
var lowerTab [256]byte

// hexVal holds the value of a HEXDIG byte; meaningful only where cHex is set.
var hexVal [256]uint8

func init() {
	for c := 0; c < 256; c++ {
		b := byte(c)
		lowerTab[c] = b
		if b >= 'A' && b <= 'Z' {
			lowerTab[c] = b + ('a' - 'A')
		}
		var cl uint8
		isAlpha := (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')
		isDigit := b >= '0' && b <= '9'
		if isAlpha || isDigit || containsByte("!#$%&'*+-.^_`|~", b) {
			cl |= cToken
		}
		if b == ' ' || b == '\t' || (b >= 0x21 && b != 0x7f) {
			cl |= cValue | cExt
		}
		if b >= 0x21 && b <= 0x7e && b != '#' {
			cl |= cTarget
		}
		if isAlpha || isDigit || containsByte("-._~!$&'()*+,;=%", b) {
			cl |= cHost
		}
		if isDigit {
			cl |= cDigit | cHex
			hexVal[c] = b - '0'
		}
		if b >= 'a' && b <= 'f' {
			cl |= cHex
			hexVal[c] = b - 'a' + 10
		}
		if b >= 'A' && b <= 'F' {
			cl |= cHex
			hexVal[c] = b - 'A' + 10
		}
		charClass[c] = cl
	}
}

func containsByte(s string, b byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return true
		}
	}
	return false
}

// equalFold reports whether b equals lower, ignoring ASCII case in b.
// lower must already be lower case (all callers pass constants).
func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if lowerTab[b[i]] != lower[i] {
			return false
		}
	}
	return true
}

// equalFoldBytes compares two byte slices ignoring ASCII case.
func equalFoldBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerTab[a[i]] != lowerTab[b[i]] {
			return false
		}
	}
	return true
}

// hasPrefixFold reports whether b starts with lower, ignoring ASCII case.
func hasPrefixFold(b []byte, lower string) bool {
	return len(b) >= len(lower) && equalFold(b[:len(lower)], lower)
}

// trimOWS removes leading and trailing SP/HTAB.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// nextListElem splits the first element off a comma-separated list
// (RFC 9110 §5.6.1), trimming OWS. rest is nil once the list is exhausted.
func nextListElem(list []byte) (elem, rest []byte) {
	for i := 0; i < len(list); i++ {
		if list[i] == ',' {
			return trimOWS(list[:i]), list[i+1:]
		}
	}
	return trimOWS(list), nil
}

// isToken reports whether b is a non-empty token.
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if charClass[c]&cToken == 0 {
			return false
		}
	}
	return true
}

// parseContentLength parses 1*DIGIT strictly: no sign, no spaces, no comma,
// at most 18 digits so the value can never overflow int64.
func parseContentLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		// 18 digits is < 10^18 < MaxInt64; longer (even with leading zeros)
		// is refused because nothing legitimate needs it.
		return 0, false
	}
	var n int64
	for _, c := range v {
		if charClass[c]&cDigit == 0 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// ValidHost reports whether h is an acceptable Host value or authority
// (see validHost); the HTTP/2 translation holds :authority to it.
func ValidHost(h []byte) bool { return validHost(h) }

// validHost checks a Host value or an absolute-form authority:
// uri-host [ ":" port ] with uri-host = IP-literal / IPv4address / reg-name.
// Userinfo ('@') is refused. An empty value is valid (RFC 9112 §3.2).
func validHost(h []byte) bool {
	i := 0
	if len(h) > 0 && h[0] == '[' {
		i = 1
		for i < len(h) && h[i] != ']' {
			c := h[i]
			if charClass[c]&cHex == 0 && c != ':' && c != '.' {
				return false
			}
			i++
		}
		if i == len(h) || i == 1 {
			return false
		}
		i++ // ']'
	} else {
		for i < len(h) && charClass[h[i]]&cHost != 0 {
			i++
		}
		if i == 0 && len(h) > 0 {
			return false // ":80" has no host
		}
	}
	if i == len(h) {
		return true
	}
	if h[i] != ':' {
		return false
	}
	for i++; i < len(h); i++ {
		if charClass[h[i]]&cDigit == 0 {
			return false
		}
	}
	return true
}

// EqualFold reports whether b equals s, ignoring ASCII case on both sides;
// header and method names are compared with it everywhere in lbd.
func EqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if lowerTab[b[i]] != lowerTab[s[i]] {
			return false
		}
	}
	return true
}
