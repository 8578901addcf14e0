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
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"lbd/adminapi"
	"lbd/engine"
	"lbd/handoff"
)

// A binary upgrade (lbctl upgrade, SIGUSR2) starts the binary now
// installed at lbd's path with lbd's own arguments and gives it, as
// descriptor 3 (os/exec's ExtraFiles), one end of a socketpair. Over it:
//
//	old -> new: every listening and control socket, SCM_RIGHTS, in
//	            one-byte messages of at most maxRights descriptors
//	            ('F' more follow, 'E' the last), as HAProxy's -x does
//	old -> new: one handoff document (package handoff) naming those
//	            descriptors by position and carrying the runtime state
//	new -> old: one JSON line, {"pid":N} once it serves (listeners
//	            bound, state restored, first health round done, PID
//	            file written), or {"error":"..."} before it exits
//
// The sockets do not go through ExtraFiles: os/exec would put them in
// blocking mode (os.File.Fd), and that flag is shared with the copies
// this process still accepts on.
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
		d.notify.ready(d.notify.statusLine(d.eng) + "; upgrade failed: " + err.Error())
		return adminapi.UpgradeResult{}, err
	}
	d.eng.StopAccepting()
	d.log.Infof("upgrade: pid %d serves; handing over and draining", pid)
	d.notify.mainPID(pid, fmt.Sprintf("handed over to pid %d, draining", pid))
	return adminapi.UpgradeResult{PID: pid, Previous: os.Getpid()}, nil
}

// spawnSuccessor starts the new binary and waits for its answer.
func (d *daemon) spawnSuccessor() (int, error) {
	exe := d.priv.exe
	if exe == "" {
		return 0, errors.New("the path of lbd's binary is unknown (/proc was not mounted at start)")
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
	socks, err := d.socketFDs(st)
	defer func() {
		for _, fd := range socks {
			unix.Close(fd)
		}
	}()
	if err != nil {
		theirs.Close()
		return 0, err
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Args[0] = os.Args[0] // invoked as pound stays pound
	cmd.Env = append(successorEnv(os.Environ()), d.priv.successorEnv(d.o.configFile)...)
	// All three are this process's: os/exec would open /dev/null for a
	// nil Stdin, and a jail may have none.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{theirs}
	nf, nenv, err := d.notify.notifyFile(3 + len(cmd.ExtraFiles))
	if err != nil {
		theirs.Close()
		return 0, err
	}
	if nf != nil {
		defer nf.Close()
		cmd.ExtraFiles, cmd.Env = append(cmd.ExtraFiles, nf), append(cmd.Env, nenv)
	}
	if d.pidDir != nil {
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", pidDirFDEnv, 3+len(cmd.ExtraFiles)), pidDirEnv+"="+d.pidDir.Name())
		cmd.ExtraFiles = append(cmd.ExtraFiles, d.pidDir)
	}
	err = d.priv.startSuccessor(cmd)
	theirs.Close()
	if err != nil {
		return 0, err
	}
	reply, err := handshake(mine, socks, st)
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

// socketFDs duplicates every listening and control socket for the new
// process and describes them in st, in order. The copies share the
// sockets (and their non-blocking mode) with the ones in use.
func (d *daemon) socketFDs(st *handoff.State) ([]int, error) {
	var fds []int
	add := func(ln net.Listener, so handoff.Socket) error {
		fd, err := dupSocket(ln)
		if err != nil {
			return fmt.Errorf("socket %s: %w", ln.Addr(), err)
		}
		so.Index = len(fds)
		fds = append(fds, fd)
		st.Sockets = append(st.Sockets, so)
		return nil
	}
	for _, s := range d.eng.Sockets() {
		if err := add(s.Ln, handoff.Socket{Kind: handoff.KindListener, Key: s.Key, Name: s.Name}); err != nil {
			return fds, err
		}
	}
	for path, ln := range d.ctl.sockets() {
		if err := add(ln, handoff.Socket{Kind: handoff.KindControl, Key: engine.ControlKey(path)}); err != nil {
			return fds, err
		}
	}
	return fds, nil
}

// dupSocket returns a close-on-exec duplicate of ln's descriptor.
func dupSocket(ln net.Listener) (int, error) {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return -1, fmt.Errorf("%T cannot be passed on", ln)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	dup, derr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) {
		dup, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return -1, err
	}
	return dup, derr
}

// maxRights is how many descriptors one message carries (the kernel
// takes at most 253).
const maxRights = 200

// sendFDs passes fds in one-byte messages, 'F' while more follow.
func sendFDs(c *net.UnixConn, fds []int) error {
	for {
		n := min(len(fds), maxRights)
		tag := byte('F')
		if n == len(fds) {
			tag = 'E'
		}
		var oob []byte
		if n > 0 {
			oob = unix.UnixRights(fds[:n]...)
		}
		if _, _, err := c.WriteMsgUnix([]byte{tag}, oob, nil); err != nil {
			return err
		}
		if fds = fds[n:]; tag == 'E' {
			return nil
		}
	}
}

// recvFDs receives what sendFDs sent; the descriptors are close-on-exec.
func recvFDs(c *net.UnixConn) ([]int, error) {
	var fds []int
	for {
		buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4*maxRights))
		n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
		if err != nil {
			return fds, err
		}
		if n != 1 || flags&unix.MSG_CTRUNC != 0 {
			return fds, errors.New("descriptors lost in transit")
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return fds, err
		}
		for i := range msgs {
			got, err := unix.ParseUnixRights(&msgs[i])
			if err != nil {
				return fds, err
			}
			for _, fd := range got {
				unix.CloseOnExec(fd)
			}
			fds = append(fds, got...)
		}
		if buf[0] == 'E' {
			return fds, nil
		}
	}
}

// successorEnv is the new process's environment: the handshake
// descriptor, no socket activation or watchdog PID meant for this one,
// and never a second daemonization.
func successorEnv(env []string) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case upgradeEnv, daemonEnv, upgradeExeEnv, upgradeConfigEnv, notifyFDEnv, pidDirFDEnv, pidDirEnv,
			"LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_PID":
			continue
		}
		out = append(out, kv)
	}
	return append(out, upgradeEnv+"=3", daemonEnv+"=1")
}

// handshake sends the sockets and the state and reads the answer within
// upgradeTimeout.
func handshake(f *net.UnixConn, fds []int, st *handoff.State) (upgradeReply, error) {
	var reply upgradeReply
	if err := f.SetDeadline(time.Now().Add(upgradeTimeout)); err != nil {
		return reply, err
	}
	if err := sendFDs(f, fds); err != nil {
		return reply, fmt.Errorf("passing the sockets: %w", err)
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

// fileConn makes a socketpair end a *net.UnixConn (pollable, so
// deadlines work) and closes f.
func fileConn(f *os.File) (*net.UnixConn, error) {
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("handoff socket: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("handoff socket is a %T", c)
	}
	return uc, nil
}

// predecessor is the new process's end of the handshake.
type predecessor struct {
	f     *net.UnixConn
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
	fds, err := recvFDs(p.f)
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		files[i] = os.NewFile(uintptr(fd), "inherited")
	}
	defer func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}()
	if err != nil {
		return p, fmt.Errorf("receiving the sockets: %w", err)
	}
	st, err := handoff.Decode(p.f)
	if err != nil {
		return p, err
	}
	p.state = st
	for _, so := range st.Sockets {
		if so.Index >= len(files) || files[so.Index] == nil {
			return p, fmt.Errorf("handoff: socket %s: descriptor %d was not passed", so.Key, so.Index)
		}
		f := files[so.Index]
		files[so.Index] = nil // AddFile closes it
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
