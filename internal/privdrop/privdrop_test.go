package privdrop

import (
	"errors"
	"os/user"
	"reflect"
	"strings"
	"testing"
)

// fakeDB is a user and group database in memory.
type fakeDB struct {
	users  map[string][2]int // uid, primary gid
	groups map[string]int
	member map[string][]int // getgrouplist: primary included
	fail   error            // every lookup fails so (an NSS error)
}

func (f fakeDB) User(name string) (int, int, error) {
	if f.fail != nil {
		return -1, -1, f.fail
	}
	u, ok := f.users[name]
	if !ok {
		return -1, -1, user.UnknownUserError(name)
	}
	return u[0], u[1], nil
}

func (f fakeDB) Groups(name string) ([]int, error) { return f.member[name], nil }

func (f fakeDB) Group(name string) (int, error) {
	if f.fail != nil {
		return -1, f.fail
	}
	g, ok := f.groups[name]
	if !ok {
		return -1, user.UnknownGroupError(name)
	}
	return g, nil
}

var db = fakeDB{
	users:  map[string][2]int{"www-data": {33, 33}, "nobody": {65534, 65534}, "lbd": {120, 130}},
	groups: map[string]int{"www-data": 33, "nogroup": 65534, "ssl-cert": 110, "lbd": 130},
	member: map[string][]int{"www-data": {33}, "nobody": {65534}, "lbd": {130, 110}},
}

func TestResolve(t *testing.T) {
	at := func(s Spec) Spec {
		s.UserAt, s.GroupAt, s.JailAt = "f.cfg:1.6-10", "f.cfg:2.7-12", "f.cfg:3.10-20"
		return s
	}
	tests := []struct {
		name       string
		spec       Spec
		db         Lookup
		inherited  *Record
		uid, gid   int
		groups     []int
		wantErrSub string
	}{
		{name: "nothing asked", spec: at(Spec{}), uid: -1, gid: -1},
		{name: "jail alone changes no id", spec: at(Spec{Jail: "/var/empty"}), uid: -1, gid: -1},
		{name: "user alone takes the primary group", spec: at(Spec{User: "www-data"}), uid: 33, gid: 33, groups: []int{33}},
		{name: "user and group", spec: at(Spec{User: "nobody", Group: "nogroup"}), uid: 65534, gid: 65534, groups: []int{65534}},
		{name: "supplementary groups of the user are kept", spec: at(Spec{User: "lbd"}), uid: 120, gid: 130, groups: []int{130, 110}},
		{name: "group given replaces the primary one, as initgroups(user, gid)",
			spec: at(Spec{User: "lbd", Group: "www-data"}), uid: 120, gid: 33, groups: []int{33, 110}},
		{name: "group alone is the only group", spec: at(Spec{Group: "nogroup"}), uid: -1, gid: 65534, groups: []int{65534}},
		{name: "unknown user names the statement", spec: at(Spec{User: "nosuch"}), wantErrSub: `f.cfg:1.6-10: User "nosuch": no such user`},
		{name: "unknown group names the statement", spec: at(Spec{User: "nobody", Group: "nosuch"}), wantErrSub: `f.cfg:2.7-12: Group "nosuch": no such group`},
		{name: "a database failure is reported as it is", spec: at(Spec{User: "nobody"}),
			db: fakeDB{fail: errors.New("nss down")}, wantErrSub: `User "nobody": nss down`},
		{name: "an inherited record with the same names is used without a lookup",
			spec: at(Spec{User: "nosuch", Group: "nogroup"}), db: fakeDB{fail: errors.New("no database in the jail")},
			inherited: &Record{User: "nosuch", Group: "nogroup", UID: 7, GID: 8, Groups: []int{8}}, uid: 7, gid: 8, groups: []int{8}},
		{name: "an inherited record with other names is not used",
			spec: at(Spec{User: "nobody"}), inherited: &Record{User: "www-data", UID: 33, GID: 33},
			uid: 65534, gid: 65534, groups: []int{65534}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.db
			if d == nil {
				d = db
			}
			c, err := Resolve(tt.spec, d, tt.inherited)
			if tt.wantErrSub != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrSub) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErrSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.UID != tt.uid || c.GID != tt.gid || !reflect.DeepEqual(c.Groups, tt.groups) {
				t.Errorf("uid %d gid %d groups %v, want %d %d %v", c.UID, c.GID, c.Groups, tt.uid, tt.gid, tt.groups)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	root := State{}
	nobody := State{UIDs: [3]int{65534, 65534, 65534}, GIDs: [3]int{65534, 65534, 65534}}
	jailed := nobody
	jailed.Jail = "/srv/jail"
	user := Creds{Spec: Spec{User: "nobody", Group: "nogroup", JailAt: "f:3.1"}, UID: 65534, GID: 65534, Groups: []int{65534}}
	withJail := func(c Creds, j string) Creds { c.Jail = j; return c }
	tests := []struct {
		name       string
		c          Creds
		cur        State
		want       plan
		wantErrSub string
	}{
		{name: "nothing asked", c: Creds{UID: -1, GID: -1}, cur: root},
		{name: "root to a user keeps the bind capability", c: user, cur: root,
			want: plan{setIDs: true, setUID: true, keepBind: true}},
		{name: "root to root keeps no capability (it has them all)", c: Creds{UID: 0, GID: 0, Groups: []int{0}},
			cur: State{GIDs: [3]int{5, 5, 5}}, want: plan{setIDs: true, setUID: true}},
		{name: "already the user and group: nothing to do (upgrade, systemd User=)", c: user, cur: nobody},
		{name: "group alone leaves the user", c: Creds{UID: -1, GID: 65534, Groups: []int{65534}}, cur: root,
			want: plan{setIDs: true}},
		{name: "a saved uid of root is not done", c: user,
			cur:  State{UIDs: [3]int{65534, 65534, 0}, GIDs: [3]int{65534, 65534, 65534}},
			want: plan{setIDs: true, setUID: true, keepBind: true}},
		{name: "another user is tried (and refused by the kernel)", c: user,
			cur:  State{UIDs: [3]int{1000, 1000, 1000}, GIDs: [3]int{1000, 1000, 1000}},
			want: plan{setIDs: true, setUID: true}},
		{name: "jail entered", c: withJail(user, "/srv/jail"), cur: root,
			want: plan{chroot: true, setIDs: true, setUID: true, keepBind: true}},
		{name: "already in the jail (upgrade)", c: withJail(user, "/srv/jail"), cur: jailed},
		{name: "another jail is refused", c: withJail(user, "/srv/other"), cur: jailed,
			wantErrSub: `f:3.1: RootJail "/srv/other": lbd runs in the jail /srv/jail, which it cannot leave`},
		{name: "leaving the jail is refused", c: user, cur: jailed, wantErrSub: "RootJail was removed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.c.plan(tt.cur)
			if tt.wantErrSub != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrSub) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErrSub)
				}
				return
			}
			if err != nil || p != tt.want {
				t.Errorf("plan %+v, %v; want %+v", p, err, tt.want)
			}
		})
	}
}

func TestRecord(t *testing.T) {
	tests := []struct {
		name string
		c    Creds
		cur  State
		want Record
	}{
		{name: "user and jail", c: Creds{Spec: Spec{User: "nobody", Group: "nogroup", Jail: "/j"}, UID: 65534, GID: 65534, Groups: []int{65534}},
			want: Record{Jail: "/j", User: "nobody", Group: "nogroup", UID: 65534, GID: 65534, Groups: []int{65534}}},
		{name: "jail alone records the ids in force", c: Creds{Spec: Spec{Jail: "/j"}, UID: -1, GID: -1},
			cur: State{UIDs: [3]int{0, 0, 0}, GIDs: [3]int{4, 4, 4}}, want: Record{Jail: "/j", UID: 0, GID: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.c.Record(tt.cur)
			if !reflect.DeepEqual(r, tt.want) {
				t.Fatalf("record %+v, want %+v", r, tt.want)
			}
			back, err := ParseRecord(r.String())
			if err != nil || !reflect.DeepEqual(*back, r) {
				t.Fatalf("round trip %+v, %v; want %+v", back, err, r)
			}
		})
	}
	if r, err := ParseRecord(""); r != nil || err != nil {
		t.Errorf("empty value: %v, %v; want no record", r, err)
	}
	if _, err := ParseRecord("{"); err == nil || !strings.Contains(err.Error(), EnvRecord) {
		t.Errorf("bad value: error %v, want one naming %s", err, EnvRecord)
	}
}
