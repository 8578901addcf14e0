//go:build !linux

package privdrop

import (
	"fmt"
	"os"
	"runtime"
)

// Current returns the process's ids (real and effective; the saved ones
// are taken to be the effective ones) and the jail EnvRecord names.
func Current(inherited *Record) State {
	var s State
	s.UIDs = [3]int{os.Getuid(), os.Geteuid(), os.Geteuid()}
	s.GIDs = [3]int{os.Getgid(), os.Getegid(), os.Getegid()}
	if inherited != nil {
		s.Jail = inherited.Jail
	}
	return s
}

// Drop is implemented for Linux only; elsewhere a configuration that
// asks for a change is refused rather than run as root.
func Drop(c Creds, cur State) (*Binder, error) {
	p, err := c.plan(cur)
	if err != nil || !p.chroot && !p.setIDs {
		return nil, err
	}
	return nil, fmt.Errorf("User, Group and RootJail are implemented on Linux only, not on %s: start lbd as the user it should run as", runtime.GOOS)
}

// Binder does not exist outside Linux: Drop never returns one.
type Binder struct{}

// Do runs f.
func (b *Binder) Do(f func()) { f() }
