package privdrop

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Current returns the process's state: its ids, and the jail EnvRecord
// says it is in.
func Current(inherited *Record) State {
	var s State
	s.UIDs[0], s.UIDs[1], s.UIDs[2] = unix.Getresuid()
	s.GIDs[0], s.GIDs[1], s.GIDs[2] = unix.Getresgid()
	if inherited != nil {
		s.Jail = inherited.Jail
	}
	return s
}

// Drop puts c in force in this process, in Pound's order: chroot (and
// chdir "/"), then the groups, the group and the user. Go sets ids on
// every thread of the process (syscall.Setresuid, Go 1.16 on). On error
// the process may be half changed: the caller must exit. The Binder
// returned, nil when the process did not leave root, is the one thread
// that kept CAP_NET_BIND_SERVICE. On success EnvRecord describes the
// result, for the processes a binary upgrade starts.
func Drop(c Creds, cur State) (*Binder, error) {
	p, err := c.plan(cur)
	if err != nil {
		return nil, err
	}
	// The zone of log times is read on first use: in the jail there
	// may be no /etc/localtime to read it from. The call is for that
	// side effect alone.
	_, _ = time.Now().Zone()
	var b *Binder
	if p.keepBind {
		// Before any id changes: the thread must hold PR_SET_KEEPCAPS
		// when setresuid takes root away.
		if b, err = startBinder(); err != nil {
			return nil, fmt.Errorf("%s: User %q: %w", c.UserAt, c.User, err)
		}
	}
	if err := c.apply(p, cur); err != nil {
		b.stop()
		return nil, err
	}
	if b != nil {
		switch err := b.restrict(); {
		case errors.Is(err, errNoBindCap):
			// Root could not bind a port below 1024 either: lbd
			// goes on as it would have.
			b.stop()
			b = nil
		case err != nil:
			b.stop()
			return nil, fmt.Errorf("%s: User %q: keeping CAP_NET_BIND_SERVICE: %w", c.UserAt, c.User, err)
		}
	}
	if err := c.verify(); err != nil {
		b.stop()
		return nil, err
	}
	if err := os.Setenv(EnvRecord, c.Record(cur).String()); err != nil {
		b.stop()
		return nil, err
	}
	return b, nil
}

// apply takes the steps p lists.
func (c Creds) apply(p plan, cur State) error {
	if p.chroot {
		if err := unix.Chroot(c.Jail); err != nil {
			return stepErr(c.JailAt, "RootJail", c.Jail, "chroot", err, cur, "enter a jail")
		}
		if err := unix.Chdir("/"); err != nil {
			return stepErr(c.JailAt, "RootJail", c.Jail, "chdir /", err, cur, "enter a jail")
		}
	}
	if !p.setIDs {
		return nil
	}
	at, key, name := c.GroupAt, "Group", c.Group
	if c.Group == "" {
		at, key, name = c.UserAt, "User", c.User
	}
	if err := syscall.Setgroups(c.Groups); err != nil {
		return stepErr(at, key, name, "setgroups", err, cur, "change groups")
	}
	if err := syscall.Setresgid(c.GID, c.GID, c.GID); err != nil {
		return stepErr(at, key, name, fmt.Sprintf("setresgid %d", c.GID), err, cur, "change groups")
	}
	if p.setUID {
		if err := syscall.Setresuid(c.UID, c.UID, c.UID); err != nil {
			return stepErr(c.UserAt, "User", c.User, fmt.Sprintf("setresuid %d", c.UID), err, cur, "change users")
		}
	}
	return nil
}

// stepErr words the failure of one step, at the statement that asked
// for it.
func stepErr(at, key, name, step string, err error, cur State, what string) error {
	msg := fmt.Sprintf("%s: %s %q: %s: %v", at, key, name, step, err)
	if errors.Is(err, unix.EPERM) {
		msg += " (" + notPermitted(cur, what) + ")"
	}
	return errors.New(msg)
}

// verify checks that the ids are the ones asked for, for real, effective
// and saved ids alike, so that no way back to root is left.
func (c Creds) verify() error {
	now := Current(nil)
	if c.UID >= 0 && !allAre(now.UIDs, c.UID) {
		return fmt.Errorf("%s: User %q: uids are %v after the change, not %d", c.UserAt, c.User, now.UIDs, c.UID)
	}
	if c.GID >= 0 && !allAre(now.GIDs, c.GID) {
		return fmt.Errorf("gids are %v after the change, not %d", now.GIDs, c.GID)
	}
	return nil
}
