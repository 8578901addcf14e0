package htpasswd

import (
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"strings"

	"github.com/GehirnInc/crypt/apr1_crypt"
	"github.com/GehirnInc/crypt/md5_crypt"
	"github.com/GehirnInc/crypt/sha256_crypt"
	"github.com/GehirnInc/crypt/sha512_crypt"
	"golang.org/x/crypto/bcrypt"
)

// Format names how a hash is checked.
type Format string

// The formats htpasswd writes, and the crypt(3) ones Pound accepts
// through the C library.
const (
	FormatAPR1   Format = "apr1"   // $apr1$ (htpasswd -m, the default)
	FormatSHA1   Format = "sha1"   // {SHA} (htpasswd -s)
	FormatBcrypt Format = "bcrypt" // $2y$, $2a$, $2b$ (htpasswd -B)
	FormatMD5    Format = "md5"    // $1$ (crypt MD5)
	FormatSHA256 Format = "sha256" // $5$ (htpasswd -2)
	FormatSHA512 Format = "sha512" // $6$ (htpasswd -5)
	FormatPlain  Format = "plain"  // anything else (htpasswd -p)
)

// FormatOf tells how hash is checked. Pound tries "$apr1$" and "{SHA}"
// by prefix and hands everything else to crypt(3), comparing as plain
// text when that fails. lbd recognises the crypt(3) formats htpasswd
// writes by their prefix; anything else is plain text. Traditional DES
// crypt (htpasswd -d) has no marker and is not supported: such an entry
// is compared as plain text.
func FormatOf(hash string) Format {
	switch {
	case len(hash) > len("$apr1$") && strings.HasPrefix(hash, "$apr1$"):
		return FormatAPR1
	case len(hash) > len("{SHA}") && strings.HasPrefix(hash, "{SHA}"):
		return FormatSHA1
	case len(hash) > 4 && hash[0] == '$' && hash[1] == '2' && hash[3] == '$' && strings.IndexByte("aby", hash[2]) >= 0:
		return FormatBcrypt
	case strings.HasPrefix(hash, "$1$"):
		return FormatMD5
	case strings.HasPrefix(hash, "$5$"):
		return FormatSHA256
	case strings.HasPrefix(hash, "$6$"):
		return FormatSHA512
	}
	return FormatPlain
}

// verify reports whether pass matches hash. A recognised crypt hash is
// only checked as that hash: Pound would also accept the hash text
// itself as the password (its plain-text fallback), which lbd does not.
func verify(hash string, pass []byte) bool {
	switch FormatOf(hash) {
	case FormatAPR1:
		return apr1_crypt.New().Verify(hash, pass) == nil
	case FormatSHA1:
		return sha1Match(hash[len("{SHA}"):], pass)
	case FormatBcrypt:
		return bcrypt.CompareHashAndPassword([]byte(hash), pass) == nil
	case FormatMD5:
		return md5_crypt.New().Verify(hash, pass) == nil
	case FormatSHA256:
		return sha256_crypt.New().Verify(hash, pass) == nil
	case FormatSHA512:
		return sha512_crypt.New().Verify(hash, pass) == nil
	}
	return subtle.ConstantTimeCompare([]byte(hash), pass) == 1
}

// sha1Match checks the base64 SHA-1 digest b64 (Pound refuses a digest
// of the wrong length).
func sha1Match(b64 string, pass []byte) bool {
	want, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(want) != sha1.Size {
		return false
	}
	got := sha1.Sum(pass)
	return subtle.ConstantTimeCompare(got[:], want) == 1
}
