package edgeauth

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"sync/atomic"
)

// APIKeyConfig is one APIKeyAuth block.
type APIKeyConfig struct {
	Name string
	// Sources are the headers or query parameters a key may come in
	// (default: the X-API-Key header).
	Sources []TokenSource
	// ForwardName is a header that carries the key's name to the
	// backend ("" for none).
	ForwardName string
	Realm       string
}

// APIKeys checks keys against a file of hashed keys. The file's content
// is replaced atomically (Set) when it changes.
type APIKeys struct {
	cfg   APIKeyConfig
	keys  atomic.Pointer[map[uint64][]apiKeyEntry]
	strip []string
	stats Stats
}

// NewAPIKeys makes a checker with no keys yet.
func NewAPIKeys(cfg APIKeyConfig) *APIKeys {
	if len(cfg.Sources) == 0 {
		cfg.Sources = []TokenSource{{Kind: "header", Name: "X-API-Key"}}
	}
	a := &APIKeys{cfg: cfg}
	if cfg.ForwardName != "" {
		a.strip = []string{cfg.ForwardName}
	}
	empty := map[uint64][]apiKeyEntry{}
	a.keys.Store(&empty)
	return a
}

// ParseAPIKeys reads a key file: one key a line, "NAME sha256:HEX" where
// HEX is the SHA-256 of the key (printf %s "$KEY" | sha256sum); blank
// lines and # comments are skipped. Keys are never stored in clear.
func ParseAPIKeys(data []byte) (map[[sha256.Size]byte]string, error) {
	out := map[[sha256.Size]byte]string{}
	names := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 2 || !strings.HasPrefix(f[1], "sha256:") {
			return nil, fmt.Errorf("line %d: expected NAME sha256:HEX", line)
		}
		sum, err := hex.DecodeString(f[1][len("sha256:"):])
		if err != nil || len(sum) != sha256.Size {
			return nil, fmt.Errorf("line %d: the hash is not 64 hexadecimal digits", line)
		}
		if !headerSafe([]byte(f[0])) {
			return nil, fmt.Errorf("line %d: bad key name", line)
		}
		if names[f[0]] {
			return nil, fmt.Errorf("line %d: key name %s given twice", line, f[0])
		}
		names[f[0]] = true
		out[[sha256.Size]byte(sum)] = f[0]
	}
	return out, sc.Err()
}

// Set installs a new set of keys (the loader, and the file watcher).
func (a *APIKeys) Set(keys map[[sha256.Size]byte]string) {
	m := make(map[uint64][]apiKeyEntry, len(keys))
	for sum, name := range keys {
		id := &Identity{Name: name}
		if a.cfg.ForwardName != "" {
			id.Lines = [][]byte{[]byte(a.cfg.ForwardName + ": " + name)}
		}
		b := binary.LittleEndian.Uint64(sum[:8])
		m[b] = append(m[b], apiKeyEntry{sum: sum, id: id})
	}
	a.keys.Store(&m)
}

// apiKeyEntry is a key's hash and identity; entries are grouped by the
// first 8 bytes of the hash.
type apiKeyEntry struct {
	sum [sha256.Size]byte
	id  *Identity
}

// Len is the number of keys in use.
func (a *APIKeys) Len() int {
	n := 0
	for _, l := range *a.keys.Load() {
		n += len(l)
	}
	return n
}

// Name is the block's name.
func (a *APIKeys) Name() string { return a.cfg.Name }

// Strip is the key-name header.
func (a *APIKeys) Strip() []string { return a.strip }

// Check hashes the presented key, finds the keys whose hash starts with
// the same 8 bytes (the lookup's timing depends on the hash, never on the
// key) and compares the whole hashes in constant time.
func (a *APIKeys) Check(r Request, _ *Exchange) Outcome {
	key, ok := a.presented(r)
	if !ok {
		return Outcome{Reply: a.refusal(""), Reason: "no key"}
	}
	sum := sha256.Sum256(key)
	var found *Identity
	for _, e := range (*a.keys.Load())[binary.LittleEndian.Uint64(sum[:8])] {
		if subtle.ConstantTimeCompare(e.sum[:], sum[:]) == 1 {
			found = e.id
		}
	}
	if found == nil {
		return Outcome{Reply: a.refusal("invalid_key"), Reason: "unknown key"}
	}
	return Outcome{ID: found}
}

func (a *APIKeys) presented(r Request) ([]byte, bool) {
	for _, s := range a.cfg.Sources {
		var v []byte
		var ok bool
		if s.Kind == "query" {
			v, ok = r.Param(s.Name)
		} else {
			v, ok = r.Header(s.Name)
		}
		if ok && len(v) > 0 {
			return v, true
		}
	}
	return nil, false
}

func (a *APIKeys) refusal(code string) *Reply {
	ch := []byte("WWW-Authenticate: APIKey")
	sep := " "
	if a.cfg.Realm != "" {
		ch = append(ch, " realm="...)
		ch = appendQuoted(ch, a.cfg.Realm)
		sep = ", "
	}
	if code != "" {
		ch = append(ch, sep+`error="`+code+`"`...)
	}
	return &Reply{Status: 401, Lines: [][]byte{ch, []byte("Content-Type: text/plain")}, Body: []byte("401 Unauthorized\n")}
}

// Stats counts the decisions made with the check.
func (x *APIKeys) Stats() *Stats { return &x.stats }
