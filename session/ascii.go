package session

// ASCII helpers: HTTP field names and tokens are ASCII, and the unicode
// folding of bytes.EqualFold is both slower and wrong for them (it folds
// 'K' U+212A to 'k').

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// equalFold compares ASCII case-insensitively.
func equalFold(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

// equalFoldString is equalFold against a lower-case constant.
func equalFoldString(a []byte, s string) bool {
	if len(a) != len(s) {
		return false
	}
	for i := range a {
		if lower(a[i]) != s[i] {
			return false
		}
	}
	return true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

// trimSpace removes SP and HTAB (the only whitespace RFC 9110 allows in
// fields) from both ends.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func indexSpace(b []byte) int {
	for i, c := range b {
		if isSpace(c) {
			return i
		}
	}
	return -1
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != '0' {
			return false
		}
	}
	return true
}
