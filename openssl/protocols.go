package openssl

import (
	"crypto/tls"
	"strings"
)

// protocols in ascending order. Disable X turns off X and every older
// one, in Pound and in zproxy alike, with one exception: zproxy's
// Disable TLSv1_3 turns off TLS 1.3 alone (its config.cpp sets
// SSL_OP_NO_TLSv1_3 only, and zproxy(8) says so), which Versions takes
// as noTLS13.
var protocols = []struct {
	name string
	ver  uint16 // 0: Go never speaks it
}{{"SSLv2", 0}, {"SSLv3", 0}, {"TLSv1", tls.VersionTLS10}, {"TLSv1_1", tls.VersionTLS11},
	{"TLSv1_2", tls.VersionTLS12}, {"TLSv1_3", tls.VersionTLS13}}

// Floor is the lowest protocol lbd negotiates unless the cipher list
// sets OpenSSL's security level 0 (LegacyAllowed): TLS 1.0 and 1.1 are
// deprecated (RFC 8996), Go's own default floor is TLS 1.2, and Pound
// or zproxy on OpenSSL 3 refuse them too at the default security level
// (their handshakes need SHA-1 or MD5+SHA-1 signatures). Enabling TLS
// 1.0 because a file only says "Disable SSLv3" would be a regression,
// not compatibility.
const Floor = tls.VersionTLS12

// LegacyFloor is the floor with security level 0: Go speaks no SSL.
const LegacyFloor = tls.VersionTLS10

// Versions returns the protocol range [lo, hi] left when `Disable
// disable` is in effect ("" = nothing disabled) and, with noTLS13, TLS
// 1.3 is off too. The floor is Floor, or LegacyFloor with legacy. ok is
// false when nothing is left (Disable TLSv1_3 in Pound's meaning,
// Disable TLSv1_2 with zproxy's Disable TLSv1_3) or the name is
// unknown. Every Disable turns off a protocol and all older ones, or
// the newest alone, so what is left is always one contiguous range, the
// only shape crypto/tls can express.
func Versions(disable string, noTLS13, legacy bool) (lo, hi uint16, ok bool) {
	lo, hi = Floor, tls.VersionTLS13
	if legacy {
		lo = LegacyFloor
	}
	if noTLS13 {
		hi = tls.VersionTLS12
	}
	if disable != "" {
		i := protocolIndex(disable)
		switch {
		case i < 0:
			return 0, 0, false
		case i+1 == len(protocols):
			return 0, 0, false
		}
		lo = max(lo, protocols[i+1].ver)
	}
	if lo > hi {
		return 0, 0, false
	}
	return lo, hi, true
}

func protocolIndex(name string) int {
	for i, p := range protocols {
		if strings.EqualFold(p.name, name) {
			return i
		}
	}
	return -1
}

// LegacyAllowed reports whether an OpenSSL cipher string sets security
// level 0 (its last @SECLEVEL=n wins, as in OpenSSL). That is what a
// Pound or zproxy administrator on OpenSSL 3 has to write to serve TLS
// 1.0 and 1.1 clients, so lbd takes it as the same explicit opt-in;
// the Disable statements still apply.
func LegacyAllowed(list string) bool {
	level := ""
	for _, item := range cipherItems(list) {
		if v, ok := strings.CutPrefix(item, "@SECLEVEL="); ok {
			level = v
		}
	}
	return level == "0"
}
