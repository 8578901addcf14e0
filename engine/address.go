package engine

import (
	"strconv"
	"strings"

	"lbd/config"
)

// A backend's address and its key across reloads, as the build makes
// them.

// backendKey identifies a backend across reloads: the same service (by
// position and name) and the same address keep their state and sessions.
// It is written in one buffer: a load makes one per backend, and the
// pieces concatenated were as many small strings of garbage.
func backendKey(scope string, svcIdx int, svc *config.Service, b *config.Backend) string {
	var room [128]byte
	k := append(room[:0], scope...)
	k = strconv.AppendInt(append(k, '/'), int64(svcIdx), 10)
	k = append(append(append(k, ':'), svc.Name...), '/')
	k = appendDialAddress(k, b)
	k = append(append(append(k, emergencyTag(b)...), tlsTag(b)...), http2Tag(b)...)
	return string(k)
}

func emergencyTag(b *config.Backend) string {
	if b.Emergency {
		return "!e"
	}
	return ""
}

// dialAddress is the address b dials: a socket path, or host:port as
// net.JoinHostPort writes it.
func dialAddress(b *config.Backend) string { return string(appendDialAddress(nil, b)) }

// appendDialAddress appends dialAddress(b) to k.
func appendDialAddress(k []byte, b *config.Backend) []byte {
	switch {
	case b.Unix:
		return append(k, b.Address...)
	case strings.IndexByte(b.Address, ':') >= 0: // as net.JoinHostPort
		k = append(append(append(k, '['), b.Address...), ']')
	default:
		k = append(k, b.Address...)
	}
	return strconv.AppendInt(append(k, ':'), int64(b.Port), 10)
}

// backendAddress is what a backend at one address is known by: the
// address it dials and its id (Pound's "ADDRESS-PORT").
type backendAddress struct{ dial, id string }

// hostPort is a TCP backend's address as the configuration writes it.
type hostPort struct {
	host string
	port int
}

// address is cb's backendAddress, the same strings for every backend
// of the build at that address (20,000 backends on one address made
// 40,000 copies, 0.8 MB, at bench/scale.sh size's configuration).
func (b *builder) address(cb *config.Backend) backendAddress {
	if cb.Unix {
		return backendAddress{dial: cb.Address}
	}
	k := hostPort{cb.Address, cb.Port}
	if a, ok := b.addrs[k]; ok {
		return a
	}
	a := backendAddress{dial: dialAddress(cb), id: cb.Address + "-" + strconv.Itoa(cb.Port)}
	if b.addrs == nil {
		b.addrs = map[hostPort]backendAddress{}
	}
	b.addrs[k] = a
	return a
}
