package config

// Limits are the TBF filters and BasicAuth password files a listener or
// a service uses: in its conditions, its Rewrite rules, and the detached
// conditions those Eval. The control API shows their state.
type Limits struct {
	TBFs  []*TBF
	Files []*PasswordFile
	// ACLs are the ACL conditions' lists, each once.
	ACLs []*ACL
}

// ServiceLimits collects what service s uses; detached are cfg.Detached.
func ServiceLimits(s *Service, detached []*Detached) Limits {
	u := limitsWalk{detached: detached, seen: map[any]bool{}}
	u.conds(s.Conditions)
	u.rules(s.Rewrites.Request)
	u.rules(s.Rewrites.Response)
	return u.out
}

// ListenerLimits collects what listener l's own rules use.
func ListenerLimits(l *Listener, detached []*Detached) Limits {
	u := limitsWalk{detached: detached, seen: map[any]bool{}}
	u.rules(l.Rewrites.Request)
	u.rules(l.Rewrites.Response)
	return u.out
}

type limitsWalk struct {
	detached []*Detached
	seen     map[any]bool // filters, files and detached conditions met
	out      Limits
}

func (u *limitsWalk) rules(rs []*Rule) {
	for _, r := range rs {
		for br := r; br != nil; br = br.Else {
			u.conds(br.Conds)
			for _, a := range br.Actions {
				if a.Rule != nil {
					u.rules([]*Rule{a.Rule})
				}
			}
		}
	}
}

func (u *limitsWalk) conds(cs []*Condition) {
	for _, c := range cs {
		switch {
		case c.TBF != nil && !u.seen[c.TBF]:
			u.seen[c.TBF] = true
			u.out.TBFs = append(u.out.TBFs, c.TBF)
		case c.Kind == CondACL && c.ACL != nil && !u.seen[c.ACL]:
			u.seen[c.ACL] = true
			u.out.ACLs = append(u.out.ACLs, c.ACL)
		case c.Auth != nil && !u.seen[c.Auth]:
			u.seen[c.Auth] = true
			u.out.Files = append(u.out.Files, c.Auth)
		case c.Kind == CondEval:
			for _, d := range u.detached {
				if d.Name == c.Name && !u.seen[d] {
					u.seen[d] = true
					u.conds(d.Conds)
				}
			}
		}
		u.conds(c.Sub)
	}
}
