package lbctl

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"

	"github.com/urfave/cli/v2"
)

// enableCommand is poundctl's enable (alias on).
func (r *runner) enableCommand() *cli.Command {
	return &cli.Command{
		Name:      "enable",
		Aliases:   []string{"on"},
		Usage:     "enable a listener, a service or a backend",
		ArgsUsage: "/L[/S[/B]]",
		Action:    func(c *cli.Context) error { return r.setState(c, true) },
	}
}

// disableCommand is poundctl's disable (alias off). A disabled backend
// gets no new requests; requests in flight finish.
func (r *runner) disableCommand() *cli.Command {
	return &cli.Command{
		Name:      "disable",
		Aliases:   []string{"off"},
		Usage:     "disable a listener, a service or a backend",
		ArgsUsage: "/L[/S[/B]]",
		Action:    func(c *cli.Context) error { return r.setState(c, false) },
	}
}

// setState enables or disables the object named by the one argument:
// PUT or DELETE /listener/L/S/B on the Pound socket (the reply must be
// JSON true), PATCH .../backend/B/status on the zproxy socket, which can
// change backends only.
func (r *runner) setState(c *cli.Context, on bool) error {
	a, err := args(c, 1, 1)
	if err != nil {
		return err
	}
	p, err := parsePath(a[0])
	if err != nil {
		return err
	}
	if err := p.need(levelListener, levelBackend); err != nil {
		return err
	}
	cn, err := r.connect()
	if err != nil {
		return err
	}
	var reply []byte
	if cn.dialect == dialectPound {
		method := http.MethodPut
		if !on {
			method = http.MethodDelete
		}
		if reply, err = cn.do(method, "/listener"+p.pound(), nil); err != nil {
			return err
		}
		if !bytes.Equal(bytes.TrimSpace(reply), []byte("true")) {
			return fmt.Errorf("command failed: unexpected reply %q", bytes.TrimSpace(reply))
		}
	} else {
		if reply, err = zproxySetStatus(cn, p, on); err != nil {
			return err
		}
	}
	if r.opt.json {
		return r.printJSON(reply)
	}
	return nil
}

// zproxySetStatus is PATCH .../backend/B/status {"status":...}.
func zproxySetStatus(cn *conn, p objPath, on bool) ([]byte, error) {
	if p.level() != levelBackend {
		return nil, errors.New("only backends can be enabled or disabled through the zproxy control socket; give /L/S/B")
	}
	u, err := p.zproxy()
	if err != nil {
		return nil, err
	}
	status := "disabled"
	if on {
		status = "active"
	}
	return cn.do(http.MethodPatch, u+"/status", map[string]string{"status": status})
}
