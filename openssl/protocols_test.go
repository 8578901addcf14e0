package openssl

import (
	"crypto/tls"
	"testing"
)

func TestVersions(t *testing.T) {
	const v10, v11, v12, v13 = tls.VersionTLS10, tls.VersionTLS11, tls.VersionTLS12, tls.VersionTLS13
	tests := []struct {
		name           string
		disable        string
		noTLS13        bool
		legacy         bool
		wantLo, wantHi uint16
		ok             bool
	}{
		{"nothing disabled", "", false, false, v12, v13, true},
		{"SSLv2 is below the floor", "SSLv2", false, false, v12, v13, true},
		{"TLSv1 is below the floor", "TLSv1", false, false, v12, v13, true},
		{"name case is free", "tlsv1_1", false, false, v12, v13, true},
		{"TLSv1_2 and older", "TLSv1_2", false, false, v13, v13, true},
		{"Pound's TLSv1_3 leaves nothing", "TLSv1_3", false, false, 0, 0, false},
		{"zproxy's TLSv1_3 alone", "", true, false, v12, v12, true},
		{"zproxy's TLSv1_2 and TLSv1_3 leave nothing", "TLSv1_2", true, false, 0, 0, false},
		{"zproxy's TLSv1_1 and TLSv1_3", "TLSv1_1", true, false, v12, v12, true},
		{"legacy lowers the floor", "", false, true, v10, v13, true},
		{"legacy with SSLv3 disabled", "SSLv3", false, true, v10, v13, true},
		{"legacy with TLSv1 disabled", "TLSv1", false, true, v11, v13, true},
		{"legacy with zproxy's TLSv1_3", "TLSv1", true, true, v11, v12, true},
		{"legacy cannot revive TLSv1_2", "TLSv1_2", true, true, 0, 0, false},
		{"unknown name", "TLSv9", false, false, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi, ok := Versions(tt.disable, tt.noTLS13, tt.legacy)
			if lo != tt.wantLo || hi != tt.wantHi || ok != tt.ok {
				t.Errorf("Versions(%q, %v, %v) = %#x, %#x, %v; want %#x, %#x, %v",
					tt.disable, tt.noTLS13, tt.legacy, lo, hi, ok, tt.wantLo, tt.wantHi, tt.ok)
			}
		})
	}
}

func TestLegacyAllowed(t *testing.T) {
	tests := []struct {
		name, list string
		want       bool
	}{
		{"no security level", "HIGH:!aNULL", false},
		{"own item", "ALL:@SECLEVEL=0", true},
		{"glued, as usually written", "DEFAULT@SECLEVEL=0", true},
		{"level 1 still refuses them in OpenSSL 3", "ALL:@SECLEVEL=1", false},
		{"the last level wins", "ALL:@SECLEVEL=0:@SECLEVEL=2", false},
		{"the last level wins, downwards", "ALL@SECLEVEL=2 @SECLEVEL=0", true},
		{"not a level", "ALL:@STRENGTH", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LegacyAllowed(tt.list); got != tt.want {
				t.Errorf("LegacyAllowed(%q) = %v, want %v", tt.list, got, tt.want)
			}
		})
	}
}
