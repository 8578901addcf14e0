package openssl

import (
	"crypto/tls"
	"fmt"
	"strings"
)

// curveNames maps OpenSSL's group names (and the NIST and RFC aliases
// it accepts) to Go's curve IDs.
var curveNames = map[string]tls.CurveID{
	"prime256v1": tls.CurveP256, "secp256r1": tls.CurveP256, "p-256": tls.CurveP256,
	"secp384r1": tls.CurveP384, "p-384": tls.CurveP384,
	"secp521r1": tls.CurveP521, "p-521": tls.CurveP521,
	"x25519": tls.X25519,
}

// Curves translates an ECDHCurve value, one name or a colon-separated
// list in preference order, as SSL_CTX_set1_groups_list reads it.
func Curves(list string) ([]tls.CurveID, error) {
	var out []tls.CurveID
	for _, name := range strings.Split(list, ":") {
		id, ok := curveNames[strings.ToLower(strings.TrimSpace(name))]
		if !ok {
			return nil, fmt.Errorf("unknown curve %q", name)
		}
		out = append(out, id)
	}
	return out, nil
}
