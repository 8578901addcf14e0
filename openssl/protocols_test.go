package openssl

import (
	"crypto/tls"
	"testing"
)

func TestVersions(t *testing.T) {
	const v12, v13 = tls.VersionTLS12, tls.VersionTLS13
	tests := []struct {
		name           string
		disable        string
		noTLS13        bool
		wantLo, wantHi uint16
		ok             bool
	}{
		{"nothing disabled", "", false, v12, v13, true},
		{"SSLv2 is below the floor", "SSLv2", false, v12, v13, true},
		{"TLSv1 is below the floor", "TLSv1", false, v12, v13, true},
		{"name case is free", "tlsv1_1", false, v12, v13, true},
		{"TLSv1_2 and older", "TLSv1_2", false, v13, v13, true},
		{"Pound's TLSv1_3 leaves nothing", "TLSv1_3", false, 0, 0, false},
		{"zproxy's TLSv1_3 alone", "", true, v12, v12, true},
		{"zproxy's TLSv1_2 and TLSv1_3 leave nothing", "TLSv1_2", true, 0, 0, false},
		{"zproxy's TLSv1_1 and TLSv1_3", "TLSv1_1", true, v12, v12, true},
		{"unknown name", "TLSv9", false, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi, ok := Versions(tt.disable, tt.noTLS13)
			if lo != tt.wantLo || hi != tt.wantHi || ok != tt.ok {
				t.Errorf("Versions(%q, %v) = %#x, %#x, %v; want %#x, %#x, %v",
					tt.disable, tt.noTLS13, lo, hi, ok, tt.wantLo, tt.wantHi, tt.ok)
			}
		})
	}
}
