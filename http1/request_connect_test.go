package http1

import "testing"

// TestConnectPath: CONNECT with a path is Pound 4's way and is accepted
// only when the limits allow it, never kept alive; authority-form stays
// the rule otherwise.
func TestConnectPath(t *testing.T) {
	allow := DefaultLimits
	allow.CheckMethods, allow.XHTTP, allow.ConnectPath = true, 3, true
	strict := allow
	strict.ConnectPath = false
	cases := []struct {
		name   string
		lim    Limits
		raw    string
		ok     bool
		status int
	}{
		{"path allowed", allow, "CONNECT /echo/foo HTTP/1.1\r\nHost: h\r\n\r\n", true, 0},
		{"path refused when not allowed", strict, "CONNECT /echo/foo HTTP/1.1\r\nHost: h\r\n\r\n", false, 400},
		{"authority form", allow, "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n", true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var req Request
			err := ParseRequestHead([]byte(tc.raw), &req, &tc.lim)
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if string(req.Target[:1]) == "/" && (req.KeepAlive || string(req.Path) != "/echo/foo") {
					t.Fatalf("keep-alive %v, path %q", req.KeepAlive, req.Path)
				}
				return
			}
			he, isHE := err.(*Error)
			if !isHE || he.Status != tc.status {
				t.Fatalf("error %v, want status %d", err, tc.status)
			}
		})
	}
}
