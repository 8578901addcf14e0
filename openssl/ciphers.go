// Package openssl speaks the OpenSSL dialect that Pound configurations
// and Pound's backend headers are written in, on top of Go's crypto/tls:
// OpenSSL cipher strings (`Ciphers "ECDHE+AESGCM:!aNULL"`) become Go
// cipher suite IDs, protocol names (`Disable TLSv1_1`) become version
// floors, and negotiated parameters and client certificates are printed
// the way OpenSSL prints them (SSL_CIPHER_description, X509_NAME_print_ex,
// ASN1_TIME_print), because backends parse the X-SSL-* headers Pound sends.
//
// Nothing here links OpenSSL: the tables are transcribed from OpenSSL 3's
// ssl/ssl_ciph.c and from `openssl ciphers -v` output.
package openssl

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// suite is one TLS 1.2 (or older) cipher suite that Go implements, with
// the columns `openssl ciphers -v` prints for it; the alias attributes
// (kECDHE, AES128, SHA1, HIGH, ...) are derived from these columns.
type suite struct {
	name  string // OpenSSL name
	id    uint16 // crypto/tls ID
	proto string // lowest protocol, as OpenSSL prints it
	kx    string
	au    string
	enc   string
	mac   string
}

// suites are the TLS 1.2 suites crypto/tls implements, in OpenSSL's
// default preference order.
var suites = []suite{
	{"ECDHE-ECDSA-AES256-GCM-SHA384", tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, "TLSv1.2", "ECDH", "ECDSA", "AESGCM(256)", "AEAD"},
	{"ECDHE-RSA-AES256-GCM-SHA384", tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, "TLSv1.2", "ECDH", "RSA", "AESGCM(256)", "AEAD"},
	{"ECDHE-ECDSA-CHACHA20-POLY1305", tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, "TLSv1.2", "ECDH", "ECDSA", "CHACHA20/POLY1305(256)", "AEAD"},
	{"ECDHE-RSA-CHACHA20-POLY1305", tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256, "TLSv1.2", "ECDH", "RSA", "CHACHA20/POLY1305(256)", "AEAD"},
	{"ECDHE-ECDSA-AES128-GCM-SHA256", tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, "TLSv1.2", "ECDH", "ECDSA", "AESGCM(128)", "AEAD"},
	{"ECDHE-RSA-AES128-GCM-SHA256", tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, "TLSv1.2", "ECDH", "RSA", "AESGCM(128)", "AEAD"},
	{"ECDHE-ECDSA-AES128-SHA256", tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256, "TLSv1.2", "ECDH", "ECDSA", "AES(128)", "SHA256"},
	{"ECDHE-RSA-AES128-SHA256", tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256, "TLSv1.2", "ECDH", "RSA", "AES(128)", "SHA256"},
	{"ECDHE-ECDSA-AES256-SHA", tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, "TLSv1", "ECDH", "ECDSA", "AES(256)", "SHA1"},
	{"ECDHE-RSA-AES256-SHA", tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA, "TLSv1", "ECDH", "RSA", "AES(256)", "SHA1"},
	{"ECDHE-ECDSA-AES128-SHA", tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, "TLSv1", "ECDH", "ECDSA", "AES(128)", "SHA1"},
	{"ECDHE-RSA-AES128-SHA", tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, "TLSv1", "ECDH", "RSA", "AES(128)", "SHA1"},
	{"ECDHE-RSA-DES-CBC3-SHA", tls.TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA, "TLSv1", "ECDH", "RSA", "3DES(168)", "SHA1"},
	{"ECDHE-ECDSA-RC4-SHA", tls.TLS_ECDHE_ECDSA_WITH_RC4_128_SHA, "TLSv1", "ECDH", "ECDSA", "RC4(128)", "SHA1"},
	{"ECDHE-RSA-RC4-SHA", tls.TLS_ECDHE_RSA_WITH_RC4_128_SHA, "TLSv1", "ECDH", "RSA", "RC4(128)", "SHA1"},
	{"AES256-GCM-SHA384", tls.TLS_RSA_WITH_AES_256_GCM_SHA384, "TLSv1.2", "RSA", "RSA", "AESGCM(256)", "AEAD"},
	{"AES128-GCM-SHA256", tls.TLS_RSA_WITH_AES_128_GCM_SHA256, "TLSv1.2", "RSA", "RSA", "AESGCM(128)", "AEAD"},
	{"AES128-SHA256", tls.TLS_RSA_WITH_AES_128_CBC_SHA256, "TLSv1.2", "RSA", "RSA", "AES(128)", "SHA256"},
	{"AES256-SHA", tls.TLS_RSA_WITH_AES_256_CBC_SHA, "SSLv3", "RSA", "RSA", "AES(256)", "SHA1"},
	{"AES128-SHA", tls.TLS_RSA_WITH_AES_128_CBC_SHA, "SSLv3", "RSA", "RSA", "AES(128)", "SHA1"},
	{"DES-CBC3-SHA", tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA, "SSLv3", "RSA", "RSA", "3DES(168)", "SHA1"},
	{"RC4-SHA", tls.TLS_RSA_WITH_RC4_128_SHA, "SSLv3", "RSA", "RSA", "RC4(128)", "SHA1"},
}

// tls13 are the TLS 1.3 suites, which OpenSSL configures apart
// (-ciphersuites) and Go does not let anyone restrict.
var tls13 = []suite{
	{"TLS_AES_256_GCM_SHA384", tls.TLS_AES_256_GCM_SHA384, "TLSv1.3", "any", "any", "AESGCM(256)", "AEAD"},
	{"TLS_CHACHA20_POLY1305_SHA256", tls.TLS_CHACHA20_POLY1305_SHA256, "TLSv1.3", "any", "any", "CHACHA20/POLY1305(256)", "AEAD"},
	{"TLS_AES_128_GCM_SHA256", tls.TLS_AES_128_GCM_SHA256, "TLSv1.3", "any", "any", "AESGCM(128)", "AEAD"},
}

// attrs returns the OpenSSL alias names a suite belongs to (ssl_ciph.c
// cipher_aliases), so that "ECDHE+AESGCM" or "!RC4" select the same
// suites as in OpenSSL.
func (s *suite) attrs() map[string]bool {
	a := map[string]bool{"ALL": true, "FIPS": !strings.HasPrefix(s.enc, "RC4") && !strings.HasPrefix(s.enc, "CHACHA")}
	switch s.kx {
	case "ECDH": // every Go ECDHE suite is authenticated, so none is AECDH
		for _, n := range []string{"kECDHE", "kEECDH", "kECDH", "ECDH", "ECDHE", "EECDH"} {
			a[n] = true
		}
	case "RSA":
		a["kRSA"] = true
		a["RSA"] = s.au == "RSA"
	}
	switch s.au {
	case "RSA":
		a["aRSA"] = true
	case "ECDSA":
		a["aECDSA"], a["ECDSA"] = true, true
	}
	enc, bits, _ := strings.Cut(strings.TrimSuffix(s.enc, ")"), "(")
	switch enc {
	case "AESGCM":
		a["AES"], a["AES"+bits], a["AESGCM"], a["HIGH"] = true, true, true, true
	case "AES":
		a["AES"], a["AES"+bits], a["CBC"], a["HIGH"] = true, true, true, true
	case "CHACHA20/POLY1305":
		a["CHACHA20"], a["HIGH"] = true, true
	case "3DES":
		a["3DES"], a["CBC"], a["MEDIUM"] = true, true, true
	case "RC4":
		a["RC4"], a["MEDIUM"] = true, true
	}
	switch s.mac {
	case "SHA1":
		a["SHA1"], a["SHA"] = true, true
	case "SHA256", "SHA384":
		a[s.mac] = true
	}
	switch s.proto {
	case "TLSv1":
		a["TLSv1"], a["TLSv1.0"] = true, true
	default:
		a[s.proto] = true
	}
	// OpenSSL 3's DEFAULT at Debian's security level leaves out RC4 and
	// 3DES; everything else Go has is in it.
	a["DEFAULT"] = !a["RC4"] && !a["3DES"]
	return a
}

// The tables below are built at the first cipher string, not at start:
// most configurations have none (sync.OnceValue).
var (
	suiteAttrs = sync.OnceValue(func() []map[string]bool {
		out := make([]map[string]bool, len(suites))
		for i := range suites {
			out[i] = suites[i].attrs()
		}
		return out
	})
	// aliases are every selector OpenSSL 3 knows; those no Go suite has
	// (DHE, CAMELLIA, PSK, ...) select nothing but are not errors.
	aliases = setOf(`ALL COMPLEMENTOFALL COMPLEMENTOFDEFAULT DEFAULT kRSA kDHr kDHd
		kDH kEDH kDHE DH EDH DHE ADH kECDHr kECDHe kECDH kEECDH kECDHE ECDH EECDH
		ECDHE AECDH aRSA aDSS DSS aNULL aECDH aECDSA ECDSA kPSK kRSAPSK kECDHEPSK
		kDHEPSK PSK aPSK kSRP SRP aSRP aGOST aGOST01 aGOST12 kGOST kGOST18 GOST89MAC
		GOST12 GOST94 GOST2012 RSA NULL eNULL DES 3DES RC4 RC2 IDEA SEED AES128
		AES256 AES AESGCM AESCCM AESCCM8 CAMELLIA128 CAMELLIA256 CAMELLIA CHACHA20
		ARIA ARIA128 ARIA256 ARIAGCM CBC MD5 SHA1 SHA SHA256 SHA384 SSLv3 TLSv1
		TLSv1.0 TLSv1.2 EXP EXPORT EXPORT40 EXPORT56 LOW MEDIUM HIGH FIPS kFZA
		aFZA eFZA FZA kKRB5 aKRB5 KRB5 kECDHEPSK`)
)

// setOf is the set of the words, built when first asked for.
func setOf(words string) func() map[string]bool {
	return sync.OnceValue(func() map[string]bool {
		m := map[string]bool{}
		for _, w := range strings.Fields(words) {
			m[w] = true
		}
		return m
	})
}

// ErrUnknownCipher reports a name in a cipher string that OpenSSL would
// not know either; Pound silently skipped those, lbd refuses them so a
// typo cannot weaken or empty the list unnoticed.
type ErrUnknownCipher struct{ Name string }

func (e *ErrUnknownCipher) Error() string { return fmt.Sprintf("unknown cipher %q", e.Name) }

// CipherSuites turns an OpenSSL cipher string (the Ciphers directive) into
// the crypto/tls suite IDs it selects, in OpenSSL's preference order. The
// grammar is OpenSSL's: items separated by ':', ',', ';' or spaces, each
// optionally prefixed by '!' (remove for good), '-' (remove) or '+' (move
// to the end, which only orders), made of names or aliases joined by '+'
// (all must match), plus @STRENGTH and @SECLEVEL=n. An empty result is an
// error, as OpenSSL's "no cipher match", since no handshake could succeed.
func CipherSuites(list string) ([]uint16, error) {
	ids, _, err := CipherSuitesIgnoring(list)
	return ids, err
}

// CipherSuitesIgnoring is CipherSuites that also returns the items it
// skipped: as OpenSSL does, a name it does not know (or an obsolete one:
// SSLv2) selects nothing, and an item it cannot read ("RC4!SSLv2") is
// passed over; only a list that selects no cipher at all is an error.
func CipherSuitesIgnoring(list string) (ids []uint16, ignored []string, err error) {
	on := make([]bool, len(suites))
	banned := make([]bool, len(suites))
	for _, item := range cipherItems(list) {
		op := item[0]
		if op == '!' || op == '-' || op == '+' {
			item = item[1:]
		} else {
			op = 0
		}
		if strings.HasPrefix(item, "@") {
			if item != "@STRENGTH" && !strings.HasPrefix(item, "@SECLEVEL=") {
				ignored = append(ignored, item)
			}
			continue
		}
		sel, err := selectSuites(item)
		if err != nil {
			var uc *ErrUnknownCipher
			if errors.As(err, &uc) {
				item = uc.Name
			}
			ignored = append(ignored, item)
			continue
		}
		for i, hit := range sel {
			switch {
			case !hit, op == '+':
			case op == '!':
				on[i], banned[i] = false, true
			case op == '-':
				on[i] = false
			case !banned[i]:
				on[i] = true
			}
		}
	}
	for i, s := range suites {
		if on[i] {
			ids = append(ids, s.id)
		}
	}
	switch {
	case len(ids) == 0 && len(ignored) > 0:
		return nil, ignored, &ErrUnknownCipher{Name: ignored[0]}
	case len(ids) == 0:
		return nil, ignored, fmt.Errorf("no cipher in %q is supported", list)
	}
	return ids, ignored, nil
}

// cipherItems splits an OpenSSL cipher string into its items. As in
// OpenSSL's ssl_cipher_process_rulestr, '@' also starts a new item, so
// "DEFAULT@SECLEVEL=0", the usual spelling, is "DEFAULT" then
// "@SECLEVEL=0".
func cipherItems(list string) []string {
	var items []string
	for _, f := range strings.FieldsFunc(list, func(r rune) bool {
		return r == ':' || r == ',' || r == ';' || r == ' '
	}) {
		for {
			i := strings.IndexByte(f[1:], '@')
			if i < 0 {
				break
			}
			items, f = append(items, f[:i+1]), f[i+1:]
		}
		items = append(items, f)
	}
	return items
}

// selectSuites evaluates one item: names and aliases joined by '+'.
func selectSuites(item string) ([]bool, error) {
	sel := make([]bool, len(suites))
	for i := range sel {
		sel[i] = true
	}
	for _, term := range strings.Split(item, "+") {
		switch {
		case term == "":
			return nil, &ErrUnknownCipher{Name: item}
		case aliases()[term]:
			attrs := suiteAttrs()
			for i := range suites {
				sel[i] = sel[i] && attrs[i][term]
			}
		case knownName(term):
			for i := range suites {
				sel[i] = sel[i] && suites[i].name == term
			}
		default:
			return nil, &ErrUnknownCipher{Name: term}
		}
	}
	return sel, nil
}

// knownName reports whether OpenSSL has a cipher of this name.
func knownName(name string) bool {
	if otherNames()[name] {
		return true
	}
	for i := range suites {
		if suites[i].name == name {
			return true
		}
	}
	for i := range tls13 {
		if tls13[i].name == name {
			return true
		}
	}
	return false
}

// CheckTLS13Suites validates a `Ciphers -ciphersuites "..."` list. Go
// always offers its three TLS 1.3 suites and cannot be restricted, so the
// names are only checked; the CCM suites OpenSSL also knows are accepted.
func CheckTLS13Suites(list string) error {
	for _, n := range strings.Split(list, ":") {
		switch n {
		case "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
			"TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256":
		default:
			return &ErrUnknownCipher{Name: n}
		}
	}
	return nil
}
