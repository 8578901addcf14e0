package htpasswd

import (
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// Hashes of "pa:ss w0rd" made with Debian's htpasswd -nb (and, for $1$,
// openssl passwd -1), so the formats are checked without the tool too.
var vectors = []struct {
	name, hash string
	format     Format
}{
	{"apr1 (-m)", "$apr1$hNN8gezV$OtxSD3nRa0FF2PRvQaizQ0", FormatAPR1},
	{"sha256 crypt (-2)", "$5$jZZY8.ayg3YuTc0U$Kee90dbR/SsRV9zCJvNcZY8lG7dzIUnhqQrSthEomN0", FormatSHA256},
	{"sha512 crypt (-5)", "$6$WpMoJkGKbE7oHv5G$224A6zQG/AYb5S5FjCQCXCoem/CXkol5wNiKUSU8MpEk0bxMYSdIkpmnahQCC0BTRAUt4ApPWUFVUM8K/LWYb1", FormatSHA512},
	{"bcrypt $2y$ (-B)", "$2y$05$MW7zt0El/H8dhk13.eHBCOi6Zgshl7keBM6dwMDfGGNHErWkYYRiW", FormatBcrypt},
	{"bcrypt $2b$", "$2b$05$MW7zt0El/H8dhk13.eHBCOi6Zgshl7keBM6dwMDfGGNHErWkYYRiW", FormatBcrypt},
	{"bcrypt $2a$", "$2a$05$MW7zt0El/H8dhk13.eHBCOi6Zgshl7keBM6dwMDfGGNHErWkYYRiW", FormatBcrypt},
	{"sha1 (-s)", "{SHA}dWSJoJNAw6XxT4+U+pLN0bMzRx8=", FormatSHA1},
	{"md5 crypt", "$1$abc$wDHVoeck7jqzVv/BT5jtz/", FormatMD5},
	{"plain (-p)", "pa:ss w0rd", FormatPlain},
}

func TestFormats(t *testing.T) {
	for _, v := range vectors {
		t.Run(v.name, func(t *testing.T) {
			if got := FormatOf(v.hash); got != v.format {
				t.Fatalf("format %s, want %s", got, v.format)
			}
			f := Parse([]byte("alice:" + v.hash + "\n"))
			if !f.Check([]byte("alice:pa:ss w0rd")) {
				t.Error("the right password is refused")
			}
			for _, bad := range []string{"alice:pa:ss w0rD", "alice:", "alice:pa:ss w0rd ", "bob:pa:ss w0rd"} {
				if f.Check([]byte(bad)) {
					t.Errorf("%q is accepted", bad)
				}
			}
		})
	}
}

func TestHashTextIsNotAPassword(t *testing.T) {
	for _, v := range vectors {
		if v.format == FormatPlain {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			if Parse([]byte("u:" + v.hash)).Check([]byte("u:" + v.hash)) {
				t.Fatal("the hash itself is accepted as the password")
			}
		})
	}
}

func TestParse(t *testing.T) {
	cases := []struct {
		name  string
		file  string
		users int
		ok    []string // credentials that pass
		no    []string // credentials that do not
	}{
		{name: "comments, blanks and lines without a colon are skipped",
			file:  "# alice:x\n\n   \nnocolon\n  bob:pw\n",
			users: 1, ok: []string{"bob:pw"}, no: []string{"alice:x", "nocolon:", "# alice:x"}},
		{name: "the last line for a user wins", file: "u:one\nu:two\n",
			users: 1, ok: []string{"u:two"}, no: []string{"u:one"}},
		{name: "the hash is the rest of the line", file: "u:a:b\n",
			users: 1, ok: []string{"u:a:b"}, no: []string{"u:a"}},
		{name: "CRLF line ends", file: "u:pw\r\nv:pw2\r\n",
			users: 2, ok: []string{"u:pw", "v:pw2"}, no: []string{"u:pw\r"}},
		{name: "no newline at the end", file: "u:pw", users: 1, ok: []string{"u:pw"}},
		{name: "an empty user name", file: ":pw\n", users: 1, ok: []string{":pw"}, no: []string{"x:pw"}},
		{name: "an empty file", file: "", no: []string{"u:pw", ":"}},
		{name: "credentials without a colon", file: "u:pw\n", users: 1, no: []string{"upw", "u"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := Parse([]byte(tc.file))
			if f.Len() != tc.users {
				t.Errorf("%d users, want %d", f.Len(), tc.users)
			}
			for _, c := range tc.ok {
				if !f.Check([]byte(c)) {
					t.Errorf("%q refused", c)
				}
			}
			for _, c := range tc.no {
				if f.Check([]byte(c)) {
					t.Errorf("%q accepted", c)
				}
			}
		})
	}
}

// countVerify counts the hash checks that Check runs.
func countVerify(t *testing.T) *atomic.Int64 {
	var n atomic.Int64
	verifyHash = func(h string, p []byte) bool { n.Add(1); return verify(h, p) }
	t.Cleanup(func() { verifyHash = verify })
	return &n
}

func TestCache(t *testing.T) {
	n := countVerify(t)
	f := Parse([]byte("u:$2y$04$p6O2bMKSZeET7xhUVu4mEuOCgs6qhWh3acOlAFq3.mH2Z61S8qt5W\n"))
	for range 3 {
		if !f.Check([]byte("u:x")) {
			t.Fatal("refused")
		}
		if f.Check([]byte("u:y")) {
			t.Fatal("a wrong password accepted")
		}
	}
	if got := n.Load(); got != 2 {
		t.Fatalf("%d hash checks for 6 requests with 2 credentials, want 2", got)
	}
	// A flood of wrong passwords cannot evict the verified one.
	for i := range 4 * badSlots {
		f.cache.store(ptr(f.cache.sum([]byte(fmt.Sprintf("u:%d", i)))), false)
	}
	n.Store(0)
	if !f.Check([]byte("u:x")) || n.Load() != 0 {
		t.Fatalf("the verified credentials were forgotten (%d hash checks)", n.Load())
	}
	// Another generation of the same file starts with nothing cached.
	g := Parse([]byte("u:$2y$04$p6O2bMKSZeET7xhUVu4mEuOCgs6qhWh3acOlAFq3.mH2Z61S8qt5W\n"))
	if !g.Check([]byte("u:x")) || n.Load() != 1 {
		t.Fatalf("a new generation used the old cache (%d hash checks)", n.Load())
	}
}

func TestLongCredentials(t *testing.T) {
	long := strings.Repeat("p", 3*inlineCred)
	f := Parse([]byte("u:" + long + "\n"))
	for i := range 2 { // checked, then from the cache
		if !f.Check([]byte("u:" + long)) {
			t.Fatalf("check %d: a long password is refused", i)
		}
	}
	if f.Check([]byte("u:" + long + "x")) {
		t.Fatal("a longer one is accepted")
	}
}

func ptr(d digest) *digest { return &d }

// TestHtpasswdTool checks fresh hashes from every htpasswd format, with
// random salts, when the tool is installed (apache2-utils).
func TestHtpasswdTool(t *testing.T) {
	if _, err := exec.LookPath("htpasswd"); err != nil {
		t.Skip("htpasswd is not installed")
	}
	for _, flag := range []string{"-m", "-B", "-2", "-5", "-s", "-p"} {
		t.Run(flag, func(t *testing.T) {
			pass := "S3cret:" + flag
			out, err := exec.Command("htpasswd", "-nb"+flag[1:], "carol", pass).Output()
			if err != nil {
				t.Fatal(err)
			}
			f := Parse(out)
			if !f.Check([]byte("carol:" + pass)) {
				t.Errorf("%q: refused", out)
			}
			if f.Check([]byte("carol:" + pass + "!")) {
				t.Errorf("%q: a wrong password accepted", out)
			}
		})
	}
}

func BenchmarkCheckCached(b *testing.B) {
	f := Parse([]byte("u:$2y$05$MW7zt0El/H8dhk13.eHBCOi6Zgshl7keBM6dwMDfGGNHErWkYYRiW\n"))
	cred := []byte("u:pa:ss w0rd")
	if !f.Check(cred) {
		b.Fatal("refused")
	}
	b.ReportAllocs()
	for b.Loop() {
		if !f.Check(cred) {
			b.Fatal("refused")
		}
	}
}

// TestPeekCachesNothing checks that Peek answers like Check but leaves
// the cache as it was: a Check afterwards still runs the hash, and a
// Peek of checked credentials uses the cache.
func TestPeekCachesNothing(t *testing.T) {
	n := countVerify(t)
	f := Parse([]byte("u:$2y$04$p6O2bMKSZeET7xhUVu4mEuOCgs6qhWh3acOlAFq3.mH2Z61S8qt5W\n"))
	for range 2 {
		if !f.Peek([]byte("u:x")) || f.Peek([]byte("u:y")) || f.Peek([]byte("v:x")) {
			t.Fatal("Peek and Check disagree")
		}
	}
	if got := n.Load(); got != 4 {
		t.Fatalf("%d hash checks for 4 peeks of known users, want 4 (nothing cached)", got)
	}
	if !f.Check([]byte("u:x")) || n.Load() != 5 {
		t.Fatalf("Check after Peek ran %d hashes in all, want 5", n.Load())
	}
	if !f.Peek([]byte("u:x")) || n.Load() != 5 {
		t.Fatalf("Peek of cached credentials ran a hash (%d in all)", n.Load())
	}
}
