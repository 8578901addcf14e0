// Package privdrop gives up root as Pound does once everything the
// configuration names is open: chroot into RootJail, then the
// supplementary groups, the group and the user. Unlike Pound, one thread
// keeps CAP_NET_BIND_SERVICE (Linux) so that a listener a reload adds can
// still bind a port below 1024, and the process records what it did in
// its environment so that the lbd a binary upgrade starts (already that
// user, already in the jail) takes the drop as done instead of failing.
package privdrop

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/user"
	"slices"
	"strconv"
)

// EnvRecord names the environment variable in which a process that
// dropped its privileges describes the result (Record, JSON). The lbd a
// binary upgrade starts inherits it: inside a jail it may not reach the
// user database, and it cannot chroot again.
const EnvRecord = "LBD_PRIVILEGES"

// Spec is what the configuration asks for. The loci name the statements
// in errors (Pound's "file:line.col-col").
type Spec struct {
	User, Group, Jail       string
	UserAt, GroupAt, JailAt string
}

// Creds are what a Spec resolves to.
type Creds struct {
	Spec
	UID, GID int   // -1: not asked for
	Groups   []int // supplementary groups; nil when GID is -1
}

// Record is what a process that dropped its privileges puts in
// EnvRecord: the names it was given and the ids they resolved to.
type Record struct {
	Jail   string `json:"jail,omitempty"`
	User   string `json:"user,omitempty"`
	UID    int    `json:"uid"`
	Group  string `json:"group,omitempty"`
	GID    int    `json:"gid"`
	Groups []int  `json:"groups,omitempty"`
}

// Lookup is the user and group database: Resolve reads it before the
// drop, when it is certainly reachable. OS is the system's.
type Lookup interface {
	// User returns the user's uid and primary gid.
	User(name string) (uid, gid int, err error)
	// Groups returns the groups the user is a member of, primary
	// included (getgrouplist(3)).
	Groups(name string) ([]int, error)
	Group(name string) (gid int, err error)
}

// Resolve looks the names of s up. When inherited (from EnvRecord) has
// the same names, its ids are used instead: the process runs where the
// database may be out of reach (a jail) and already has them. The
// supplementary groups are those of initgroups(3): the group lbd runs
// under and every group the user database lists User in; with Group and
// no User, that group alone. Pound leaves them alone (a root started
// Pound keeps root's supplementary groups), and lbd does not: they would
// give the process the root group's access.
func Resolve(s Spec, db Lookup, inherited *Record) (Creds, error) {
	c := Creds{Spec: s, UID: -1, GID: -1}
	if s.User == "" && s.Group == "" {
		return c, nil
	}
	if r := inherited; r != nil && r.User == s.User && r.Group == s.Group {
		c.UID, c.GID, c.Groups = r.UID, r.GID, slices.Clone(r.Groups)
		return c, nil
	}
	primary := -1
	if s.User != "" {
		uid, gid, err := db.User(s.User)
		if err != nil {
			return c, fmt.Errorf("%s: User %q: %w", s.UserAt, s.User, lookupErr(err, "no such user"))
		}
		c.UID, c.GID, primary = uid, gid, gid
	}
	if s.Group != "" {
		gid, err := db.Group(s.Group)
		if err != nil {
			return c, fmt.Errorf("%s: Group %q: %w", s.GroupAt, s.Group, lookupErr(err, "no such group"))
		}
		c.GID = gid
	}
	c.Groups = []int{c.GID}
	if s.User == "" {
		return c, nil
	}
	member, err := db.Groups(s.User)
	if err != nil {
		return c, fmt.Errorf("%s: User %q: groups: %w", s.UserAt, s.User, err)
	}
	for _, g := range member {
		// getgrouplist counts the passwd entry's group in; with Group
		// given that one is not lbd's group, and initgroups(user, gid)
		// would not add it either.
		if g == primary && g != c.GID || slices.Contains(c.Groups, g) {
			continue
		}
		c.Groups = append(c.Groups, g)
	}
	return c, nil
}

// lookupErr says "no such user/group" for the database's not-found
// errors and keeps any other (an NSS failure) as it is.
func lookupErr(err error, missing string) error {
	var uu user.UnknownUserError
	var ug user.UnknownGroupError
	if errors.As(err, &uu) || errors.As(err, &ug) {
		return errors.New(missing)
	}
	return err
}

// Record returns what to put in EnvRecord once c is in force.
func (c Creds) Record(cur State) Record {
	r := Record{Jail: c.Jail, User: c.User, Group: c.Group, UID: c.UID, GID: c.GID, Groups: slices.Clone(c.Groups)}
	if r.UID < 0 {
		r.UID = cur.UIDs[1]
	}
	if r.GID < 0 {
		r.GID = cur.GIDs[1]
	}
	return r
}

// ParseRecord reads EnvRecord's value; "" is no record.
func ParseRecord(v string) (*Record, error) {
	if v == "" {
		return nil, nil
	}
	r := &Record{}
	if err := json.Unmarshal([]byte(v), r); err != nil {
		return nil, fmt.Errorf("%s: %w", EnvRecord, err)
	}
	return r, nil
}

// String is EnvRecord's value for r.
func (r Record) String() string {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // strings and ints always marshal
	}
	return string(b)
}

// State is the process's ids (real, effective, saved) and the jail an
// earlier lbd of this line (EnvRecord) entered.
type State struct {
	UIDs, GIDs [3]int
	Jail       string
}

// plan is what Drop has to do.
type plan struct {
	chroot bool
	setIDs bool // setgroups and setresgid, setresuid when setUID
	setUID bool
	// keepBind: the process leaves root, so one thread must keep
	// CAP_NET_BIND_SERVICE (privileged ports at a reload).
	keepBind bool
}

// plan decides what c asks of a process in state cur. What is already
// so is not done again: a process that already runs as the user and
// group (a binary upgrade's new process, or one systemd started with
// User=) has nothing to do, and could not do it.
func (c Creds) plan(cur State) (plan, error) {
	var p plan
	switch {
	case cur.Jail == c.Jail:
	case cur.Jail == "":
		p.chroot = true
	case c.Jail == "":
		return p, fmt.Errorf("lbd runs in the jail %s, which it cannot leave: RootJail was removed; restart lbd to run without it", cur.Jail)
	default:
		return p, fmt.Errorf("%s: RootJail %q: lbd runs in the jail %s, which it cannot leave: restart lbd to change RootJail", c.JailAt, c.Jail, cur.Jail)
	}
	uidDone := c.UID < 0 || allAre(cur.UIDs, c.UID)
	gidDone := c.GID < 0 || allAre(cur.GIDs, c.GID)
	if uidDone && gidDone {
		return p, nil
	}
	p.setIDs, p.setUID = true, c.UID >= 0
	p.keepBind = p.setUID && c.UID != 0 && slices.Contains(cur.UIDs[:], 0)
	return p, nil
}

func allAre(ids [3]int, id int) bool { return ids[0] == id && ids[1] == id && ids[2] == id }

// notPermitted explains an EPERM from a step only root may take.
func notPermitted(cur State, what string) string {
	return "lbd runs as uid " + strconv.Itoa(cur.UIDs[1]) + " and only root can " + what +
		": start lbd as root, or as the user and group the configuration names"
}
