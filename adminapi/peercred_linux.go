//go:build linux

package adminapi

import (
	"net"
	"syscall"
)

// peerCred reads SO_PEERCRED of a UNIX connection: the pid, uid and gid of
// the connecting process, as the kernel saw them at connect time.
func peerCred(c net.Conn) PeerCred {
	unknown := PeerCred{PID: -1, UID: -1, GID: -1}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return unknown
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return unknown
	}
	var cred *syscall.Ucred
	cerr := raw.Control(func(fd uintptr) {
		cred, err = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	})
	if cerr != nil || err != nil || cred == nil {
		return unknown
	}
	return PeerCred{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid), Known: true}
}
