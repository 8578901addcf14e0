package privdrop

import (
	"fmt"
	"os/user"
	"strconv"
)

// OS is the system's user and group database (os/user: NSS through
// libc in a cgo build, /etc/passwd and /etc/group otherwise).
var OS Lookup = osLookup{}

type osLookup struct{}

func (osLookup) User(name string) (uid, gid int, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		return -1, -1, err
	}
	if uid, err = atoiID("uid", u.Uid); err != nil {
		return -1, -1, err
	}
	if gid, err = atoiID("gid", u.Gid); err != nil {
		return -1, -1, err
	}
	return uid, gid, nil
}

func (osLookup) Groups(name string) ([]int, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(ids))
	for _, s := range ids {
		id, err := atoiID("gid", s)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

func (osLookup) Group(name string) (int, error) {
	g, err := user.LookupGroup(name)
	if err != nil {
		return -1, err
	}
	return atoiID("gid", g.Gid)
}

// atoiID reads a numeric id (os/user gives them as strings).
func atoiID(what, s string) (int, error) {
	id, err := strconv.Atoi(s)
	if err != nil || id < 0 {
		return -1, fmt.Errorf("%s %q is not a number", what, s)
	}
	return id, nil
}
