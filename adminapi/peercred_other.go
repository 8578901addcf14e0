//go:build !linux

package adminapi

import "net"

// peerCred is not implemented off Linux; callers are logged as unknown.
func peerCred(net.Conn) PeerCred {
	return PeerCred{PID: -1, UID: -1, GID: -1}
}
