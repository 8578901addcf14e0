package privdrop

import (
	"errors"
	"runtime"

	"golang.org/x/sys/unix"
)

// Capabilities are a property of each thread, and Go offers no way to
// change them on all threads of a cgo binary (syscall.AllThreadsSyscall
// refuses; glibc broadcasts only the set*id calls). So the drop keeps
// CAP_NET_BIND_SERVICE on one thread, which a goroutine holds locked for
// the life of the process: every other thread loses all capabilities
// when setresuid leaves root. The Binder runs on that thread what needs
// the capability: binding a listener to a port below 1024, and starting
// the new binary of an upgrade, which inherits it as an ambient
// capability (its own threads then all have it, as under systemd's
// AmbientCapabilities=). Go never runs another goroutine on a locked
// thread, nor starts a thread from one, so the capability stays there.
type Binder struct {
	work chan func()
}

// startBinder locks a thread and sets PR_SET_KEEPCAPS on it, so that it
// keeps its permitted capabilities through setresuid.
func startBinder() (*Binder, error) {
	b := &Binder{work: make(chan func())}
	ready := make(chan error)
	go b.loop(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return b, nil
}

func (b *Binder) loop(ready chan<- error) {
	// Never unlocked: when the goroutine ends (stop), so does the
	// thread, and its capabilities with it.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_KEEPCAPS, 1, 0, 0, 0); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for f := range b.work {
		f()
	}
}

// Do runs f on the thread that holds CAP_NET_BIND_SERVICE, and returns
// when f has.
func (b *Binder) Do(f func()) {
	done := make(chan struct{})
	b.work <- func() {
		defer close(done)
		f()
	}
	<-done
}

// stop ends the thread (a failed drop). b may be nil.
func (b *Binder) stop() {
	if b != nil {
		close(b.work)
	}
}

// errNoBindCap: root had no CAP_NET_BIND_SERVICE to keep (a container
// that withholds it).
var errNoBindCap = errors.New("the process does not have it")

// restrict leaves the binder's thread CAP_NET_BIND_SERVICE alone, in
// the effective, permitted and inheritable sets and as an ambient
// capability (for the new process of an upgrade), and clears
// PR_SET_KEEPCAPS. It runs after setresuid left root.
func (b *Binder) restrict() error {
	var err error
	b.Do(func() { err = keepBindOnThisThread() })
	return err
}

func keepBindOnThisThread() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	kept := data[0].Permitted&bindMask != 0
	data = bindOnly()
	if !kept {
		// Nothing to keep: clear what PR_SET_KEEPCAPS kept.
		data = [2]unix.CapUserData{}
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_KEEPCAPS, 0, 0, 0, 0); err != nil {
		return err
	}
	if !kept {
		return errNoBindCap
	}
	return unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, unix.CAP_NET_BIND_SERVICE, 0, 0)
}

// bindMask is CAP_NET_BIND_SERVICE (10) in the first word of a set.
const bindMask = 1 << unix.CAP_NET_BIND_SERVICE

// bindOnly is the capability sets of a thread that has
// CAP_NET_BIND_SERVICE and nothing else.
func bindOnly() [2]unix.CapUserData {
	return [2]unix.CapUserData{{Effective: bindMask, Permitted: bindMask, Inheritable: bindMask}}
}
