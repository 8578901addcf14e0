package adminapi

import (
	"errors"
	"net/http"
	"strconv"
)

// Upgrader is implemented by a Controller that can replace its own
// binary without dropping a connection (lbd's binary upgrade). The API
// serves PATCH /upgrade in both dialects when the Controller has it.
type Upgrader interface {
	// Upgrade starts the new binary, hands it the sockets and the
	// runtime state, and returns once it serves.
	Upgrade() (UpgradeResult, error)
	// HandOver is called once the reply to a successful Upgrade is
	// sent: the process then stops accepting and drains.
	HandOver()
}

// UpgradeResult names the process that took over.
type UpgradeResult struct {
	PID, Previous int
}

// ErrUpgradeUnsupported: the Controller cannot upgrade (501).
var ErrUpgradeUnsupported = errors.New("this control socket cannot upgrade the binary")

// upgradeReply runs an upgrade and returns the reply, in zproxy's result
// shape for both dialects: {"result":"ok","pid":N,"previous":M}, or
// {"result":"error","reason":...} with 501 (no upgrade here) or 500;
// handOver is not nil after a successful upgrade.
func upgradeReply(c Controller) (status int, body []byte, handOver func()) {
	u, ok := c.(Upgrader)
	if !ok {
		o := jobject{}.add("result", "error").add("reason", ErrUpgradeUnsupported.Error())
		return http.StatusNotImplemented, encodeJSON(o, zproxyCompact), nil
	}
	res, err := u.Upgrade()
	if err != nil {
		o := jobject{}.add("result", "error").add("reason", "upgrade failed: "+err.Error())
		return statusOrInternal(err), encodeJSON(o, zproxyCompact), nil
	}
	o := jobject{}.add("result", "ok").add("pid", res.PID).add("previous", res.Previous)
	return http.StatusOK, encodeJSON(o, zproxyCompact), u.HandOver
}

func statusOrInternal(err error) int {
	if s := statusOf(err); s != http.StatusOK {
		return s
	}
	return http.StatusInternalServerError
}

// upgrade is PATCH /upgrade on the Pound socket.
func (a *poundAPI) upgrade(w http.ResponseWriter, _ *http.Request) {
	status, body, handOver := upgradeReply(a.c)
	writeRaw(w, rawResponse{status: status, minor: 1, headers: [][2]string{
		{"Content-Type", "application/json"},
		{"Content-Length", strconv.Itoa(len(body))},
		{"Connection", "close"},
	}, body: body})
	if handOver != nil {
		handOver()
	}
}

// zproxyUpgrade is PATCH /upgrade on the zproxy socket; it is a plain
// handler because the hand-over must follow the reply.
func (a *zproxyAPI) zproxyUpgrade(w http.ResponseWriter, _ *http.Request) {
	status, body, handOver := upgradeReply(a.c)
	writeZproxy(w, zreply{status: status, body: body})
	if handOver != nil {
		handOver()
	}
}
