// Package htpasswd checks Basic credentials against the content of an
// htpasswd file, as Pound's BasicAuth condition does. A File is one
// generation of a file's content: it is built once per read and never
// changes, so requests use it without locks, and its cache of checked
// credentials goes away with it when the file is read again.
package htpasswd

import (
	"bufio"
	"bytes"
)

// File is the parsed content of a password file.
type File struct {
	users map[string]string // user -> hash as written
	cache cache
}

// Parse reads an htpasswd file the way Pound does: one "user:hash" per
// line; leading blanks are skipped, and so are comment lines (#), blank
// lines and lines without a colon. The hash is the rest of the line, so
// it may itself hold colons. When a user appears twice the last line
// wins (Pound pushes each line to the front of the list it searches).
func Parse(data []byte) *File {
	f := &File{users: map[string]string{}}
	f.cache.init()
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), len(data)+1)
	for sc.Scan() {
		line := bytes.TrimLeft(sc.Bytes(), " \t")
		// A file written on Windows keeps its CR after bufio's split;
		// it is not part of any hash.
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		user, hash, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		f.users[string(user)] = string(hash)
	}
	return f
}

// verifyHash is verify; tests count the calls through it.
var verifyHash = verify

// Len is the number of users.
func (f *File) Len() int { return len(f.users) }

// Check reports whether cred, the decoded credentials of an
// "Authorization: Basic" header ("user:password", split at the first
// colon), names a user of f with that password. The result of a check
// that ran a hash is cached, so a client that repeats its credentials
// costs one digest, not one bcrypt, per request.
func (f *File) Check(cred []byte) bool { return f.check(cred, true) }

// Peek is Check without recording the outcome in the cache (the routing
// explainer's dry run leaves everything as it found it).
func (f *File) Peek(cred []byte) bool { return f.check(cred, false) }

func (f *File) check(cred []byte, record bool) bool {
	user, pass, ok := bytes.Cut(cred, []byte{':'})
	if !ok {
		return false
	}
	hash, known := f.users[string(user)]
	if !known {
		return false
	}
	sum := f.cache.sum(cred)
	if res, hit := f.cache.lookup(&sum); hit {
		return res
	}
	res := verifyHash(hash, pass)
	if record {
		f.cache.store(&sum, res)
	}
	return res
}
