package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"lbd/adminapi"
	"lbd/engine"
	"lbd/handoff"
)

// A binary upgrade (lbctl upgrade, SIGUSR2) starts the binary now
// installed at lbd's path with lbd's own arguments and hands it, through
// os/exec's ExtraFiles, a socketpair for the handshake (descriptor 3),
// then every listening socket and control socket. The handshake is:
//
//	old -> new: one handoff document (package handoff) naming the
//	            descriptors 4... and carrying the runtime state
//	new -> old: one JSON line, {"pid":N} once it serves (listeners
//	            bound, state restored, first health round done, PID
//	            file written), or {"error":"..."} before it exits
//
// Both processes accept on the shared sockets for a moment; then the old
// one stops accepting and drains with Grace (engine.Handover). If the new
// one fails or does not answer within upgradeTimeout it is killed and the
// old one goes on as if nothing happened.

// upgradeEnv names the handshake descriptor in the new process.
const upgradeEnv = "LBD_UPGRADE_FD"

// upgradeTimeout bounds the wait for the new process; it stays below the
// control server's 30 s write timeout so lbctl hears the outcome.
const upgradeTimeout = 25 * time.Second

// upgradeReply is the new process's answer.
type upgradeReply struct {
	PID   int    `json:"pid,omitempty"`
	Error string `json:"error,omitempty"`
}

// errUpgradeBusy: an upgrade is already running or done.
var errUpgradeBusy = fmt.Errorf("an upgrade is already in progress: %w", adminapi.ErrConflict)

// startUpgrade runs the old process's side up to the new one's answer.
func (d *daemon) startUpgrade() (adminapi.UpgradeResult, error) {
	if !d.upgrading.CompareAndSwap(false, true) {
		return adminapi.UpgradeResult{}, errUpgradeBusy
	}
	d.notify.reloading("upgrading the binary")
	pid, err := d.spawnSuccessor()
	if err != nil {
		d.upgrading.Store(false)
		d.log.Errorf("upgrade failed, this process goes on serving: %v", err)
		d.notify.ready(statusLine(d.eng) + "; upgrade failed: " + err.Error())
		return adminapi.UpgradeResult{}, err
	}
	d.log.Infof("upgrade: pid %d serves; handing over and draining", pid)
	d.notify.mainPID(pid, fmt.Sprintf("handed over to pid %d, draining", pid))
	return adminapi.UpgradeResult{PID: pid, Previous: os.Getpid()}, nil
}

// spawnSuccessor starts the new binary and waits for its answer.
func (d *daemon) spawnSuccessor() (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("socketpair: %w", err)
	}
	theirs := os.NewFile(uintptr(fds[1]), "handoff")
	mine, err := fileConn(os.NewFile(uintptr(fds[0]), "handoff"))
	if err != nil {
		theirs.Close()
		return 0, err
	}
	defer mine.Close()
	st := d.eng.Handoff()
	st.PID = os.Getpid()
	files, err := d.socketFiles(st)
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if err != nil {
		theirs.Close()
		return 0, err
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Args[0] = os.Args[0] // invoked as pound stays pound
	cmd.Env = successorEnv(os.Environ())
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.ExtraFiles = append([]*os.File{theirs}, files...)
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		return 0, err
	}
	reply, err := handshake(mine, st)
	if err == nil && reply.Error != "" {
		err = errors.New(reply.Error)
	}
	if err == nil && reply.PID != cmd.Process.Pid {
		err = fmt.Errorf("the new process says it is pid %d, not %d", reply.PID, cmd.Process.Pid)
	}
	if err != nil {
		// A failed successor must not linger or keep sockets open.
		if kerr := cmd.Process.Kill(); kerr != nil && !errors.Is(kerr, os.ErrProcessDone) {
			d.log.Warnf("upgrade: killing pid %d: %v", cmd.Process.Pid, kerr)
		}
		if werr := cmd.Wait(); werr != nil {
			err = fmt.Errorf("%w (pid %d: %v)", err, cmd.Process.Pid, werr)
		}
		return 0, err
	}
	// The successor outlives this process; its exit status is not ours
	// to collect.
	if err := cmd.Process.Release(); err != nil {
		d.log.Debugf("upgrade: %v", err)
	}
	return reply.PID, nil
}

// socketFiles duplicates every listening and control socket for the new
// process and describes them in st (descriptor 3 is the handshake).
func (d *daemon) socketFiles(st *handoff.State) ([]*os.File, error) {
	var files []*os.File
	add := func(ln net.Listener, so handoff.Socket) error {
		fl, ok := ln.(interface{ File() (*os.File, error) })
		if !ok {
			return fmt.Errorf("socket %s (%T) cannot be passed on", ln.Addr(), ln)
		}
		f, err := fl.File()
		if err != nil {
			return fmt.Errorf("socket %s: %w", ln.Addr(), err)
		}
		so.FD = 4 + len(files)
		files = append(files, f)
		st.Sockets = append(st.Sockets, so)
		return nil
	}
	for _, s := range d.eng.Sockets() {
		if err := add(s.Ln, handoff.Socket{Kind: handoff.KindListener, Key: s.Key, Name: s.Name}); err != nil {
			return files, err
		}
	}
	for path, ln := range d.ctl.sockets() {
		if err := add(ln, handoff.Socket{Kind: handoff.KindControl, Key: engine.ControlKey(path)}); err != nil {
			return files, err
		}
	}
	return files, nil
}

// successorEnv is the new process's environment: the handshake
// descriptor, no socket activation or watchdog PID meant for this one,
// and never a second daemonization.
func successorEnv(env []string) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case upgradeEnv, daemonEnv, "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_PID":
			continue
		}
		out = append(out, kv)
	}
	return append(out, upgradeEnv+"=3", daemonEnv+"=1")
}

// handshake sends the state and reads the answer within upgradeTimeout.
func handshake(f net.Conn, st *handoff.State) (upgradeReply, error) {
	var reply upgradeReply
	if err := f.SetDeadline(time.Now().Add(upgradeTimeout)); err != nil {
		return reply, err
	}
	if err := handoff.Encode(f, st); err != nil {
		return reply, fmt.Errorf("sending the state: %w", err)
	}
	line, err := bufio.NewReader(f).ReadBytes('\n')
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return reply, fmt.Errorf("the new process did not get ready within %s", upgradeTimeout)
	case err != nil && len(line) == 0:
		return reply, errors.New("the new process exited before it was ready")
	}
	if err := json.Unmarshal(line, &reply); err != nil {
		return reply, fmt.Errorf("the new process answered %q: %w", line, err)
	}
	return reply, nil
}

// fileConn makes a socket descriptor a net.Conn (pollable, so deadlines
// work) and closes f.
func fileConn(f *os.File) (net.Conn, error) {
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("handoff socket: %w", err)
	}
	return c, nil
}

// predecessor is the new process's end of the handshake.
type predecessor struct {
	f     net.Conn
	state *handoff.State
}

// inheritFromPredecessor reads the handoff when this process was started
// by an upgrade, and adds the passed sockets to in; nil when it was not.
func inheritFromPredecessor(in *engine.Inherited) (*predecessor, error) {
	v := os.Getenv(upgradeEnv)
	if v == "" {
		return nil, nil
	}
	os.Unsetenv(upgradeEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q is not a descriptor", upgradeEnv, v)
	}
	c, err := fileConn(os.NewFile(uintptr(fd), "handoff"))
	if err != nil {
		return nil, err
	}
	p := &predecessor{f: c}
	if err := p.f.SetReadDeadline(time.Now().Add(upgradeTimeout)); err != nil {
		return p, fmt.Errorf("handoff descriptor: %w", err)
	}
	st, err := handoff.Decode(p.f)
	if err != nil {
		return p, err
	}
	p.state = st
	for _, so := range st.Sockets {
		unix.CloseOnExec(so.FD)
		f := os.NewFile(uintptr(so.FD), so.Key)
		if err := in.AddFile(f, so.Name, so.Key, fmt.Sprintf("pid %d", st.PID)); err != nil {
			return p, err
		}
	}
	return p, nil
}

// answer tells the old process how the start went, and closes the
// handshake.
func (p *predecessor) answer(err error) {
	if p == nil {
		return
	}
	reply := upgradeReply{PID: os.Getpid()}
	if err != nil {
		reply = upgradeReply{Error: err.Error()}
	}
	b, merr := json.Marshal(reply)
	if merr == nil {
		// The old process may have given up already; then there is
		// nobody left to tell.
		_ = p.f.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = p.f.Write(append(b, '\n'))
	}
	p.f.Close()
}
