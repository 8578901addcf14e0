package openssl

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// VersionName is SSL_get_version: the negotiated protocol as OpenSSL
// names it ("TLSv1.2").
func VersionName(v uint16) string {
	switch v {
	case tls.VersionTLS10:
		return "TLSv1"
	case tls.VersionTLS11:
		return "TLSv1.1"
	case tls.VersionTLS12:
		return "TLSv1.2"
	case tls.VersionTLS13:
		return "TLSv1.3"
	}
	return "unknown"
}

// CipherDescription is SSL_CIPHER_description for a suite, without the
// trailing newline (Pound strips it): the text Pound puts after the
// protocol in X-SSL-cipher. Unknown IDs get Go's name.
func CipherDescription(id uint16) string {
	for _, list := range [][]suite{suites, tls13} {
		for i := range list {
			if s := &list[i]; s.id == id {
				return fmt.Sprintf("%-30s %-7s Kx=%-8s Au=%-5s Enc=%-22s Mac=%-4s",
					s.name, s.proto, s.kx, s.au, s.enc, s.mac)
			}
		}
	}
	return tls.CipherSuiteName(id)
}

// TimeString is ASN1_TIME_print: "Feb  4 16:52:42 2012 GMT".
func TimeString(t time.Time) string {
	return t.UTC().Format("Jan _2 15:04:05 2006 GMT")
}

// SerialString is Pound's "%ld" of ASN1_INTEGER_get: the serial in
// decimal, or -1 when it does not fit in a C long (as OpenSSL returns for
// the 128-bit random serials most CAs issue today).
func SerialString(n *big.Int) string {
	if n == nil || !n.IsInt64() {
		return "-1"
	}
	return n.String()
}

// FoldedPEM is the certificate as Pound's X-SSL-certificate value: the
// PEM lines joined by CRLF TAB, an obs-folded header value.
func FoldedPEM(der []byte) string {
	p := strings.TrimRight(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), "\n")
	return strings.ReplaceAll(p, "\n", "\r\n\t")
}

// shortNames are OpenSSL's short names for the attribute types that
// appear in certificate names (X509_NAME_print_ex with XN_FLAG_FN_SN).
var shortNames = map[string]string{
	"2.5.4.3": "CN", "2.5.4.4": "SN", "2.5.4.5": "serialNumber", "2.5.4.6": "C",
	"2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.9": "street", "2.5.4.10": "O",
	"2.5.4.11": "OU", "2.5.4.12": "title", "2.5.4.13": "description",
	"2.5.4.15": "businessCategory", "2.5.4.17": "postalCode", "2.5.4.41": "name",
	"2.5.4.42": "GN", "2.5.4.43": "initials", "2.5.4.44": "generationQualifier",
	"2.5.4.46": "dnQualifier", "2.5.4.65": "pseudonym", "2.5.4.97": "organizationIdentifier",
	"1.2.840.113549.1.9.1": "emailAddress", "0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1": "UID",
	"1.3.6.1.4.1.311.60.2.1.1":  "jurisdictionL", "1.3.6.1.4.1.311.60.2.1.2": "jurisdictionST",
	"1.3.6.1.4.1.311.60.2.1.3": "jurisdictionC",
}

// NameOneLine prints a DER-encoded distinguished name (a certificate's
// RawSubject or RawIssuer) as Pound does for X-SSL-Subject and
// X-SSL-Issuer: X509_NAME_print_ex with XN_FLAG_ONELINE minus
// ASN1_STRFLGS_ESC_MSB, i.e. "C = DE, O = Example, CN = client" in
// certificate order, UTF-8 kept as is, RFC 2253 specials quoted.
func NameOneLine(raw []byte) string {
	var rdns pkix.RDNSequence
	if rest, err := asn1.Unmarshal(raw, &rdns); err != nil || len(rest) > 0 {
		return ""
	}
	var b strings.Builder
	for i, rdn := range rdns {
		if i > 0 {
			b.WriteString(", ")
		}
		for j, atv := range rdn {
			if j > 0 {
				b.WriteString(" + ")
			}
			oid := atv.Type.String()
			if sn, ok := shortNames[oid]; ok {
				oid = sn
			}
			b.WriteString(oid)
			b.WriteString(" = ")
			b.WriteString(attrValue(atv.Value))
		}
	}
	return b.String()
}

// attrValue renders one attribute value: strings escaped as OpenSSL's
// do_esc_char with ESC_2253|ESC_CTRL|ESC_QUOTE, anything else dumped as
// #hex of its DER (ASN1_STRFLGS_DUMP_UNKNOWN).
func attrValue(v any) string {
	s, ok := v.(string)
	if !ok {
		der, err := asn1.Marshal(v)
		if err != nil {
			return ""
		}
		return "#" + strings.ToUpper(hex.EncodeToString(der))
	}
	var b strings.Builder
	quote := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case strings.IndexByte(",+<>;", c) >= 0,
			(c == '#' || c == ' ') && i == 0, c == ' ' && i == len(s)-1:
			quote = true // ESC_QUOTE: specials go in quotes, not escaped
			b.WriteByte(c)
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	if quote {
		return `"` + b.String() + `"`
	}
	return b.String()
}

// ClientCertHeaders are Pound 4's client-certificate header lines, each
// ending in CRLF, in the order add_ssl_headers writes them.
func ClientCertHeaders(c *x509.Certificate) string {
	var b strings.Builder
	line := func(name, value string) {
		b.WriteString(name)
		b.WriteString(": ")
		b.WriteString(value)
		b.WriteString("\r\n")
	}
	line("X-SSL-Subject", NameOneLine(c.RawSubject))
	line("X-SSL-Issuer", NameOneLine(c.RawIssuer))
	line("X-SSL-notBefore", TimeString(c.NotBefore))
	line("X-SSL-notAfter", TimeString(c.NotAfter))
	line("X-SSL-serial", SerialString(c.SerialNumber))
	line("X-SSL-certificate", FoldedPEM(c.Raw))
	return b.String()
}

// CipherHeader is Pound 4's X-SSL-cipher line (with CRLF): the negotiated
// protocol, a slash, and SSL_CIPHER_description.
func CipherHeader(version, id uint16) string {
	return "X-SSL-cipher: " + VersionName(version) + "/" + CipherDescription(id) + "\r\n"
}
