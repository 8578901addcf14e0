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
	u := limitsWalk{detached: detached}
	u.conds(s.Conditions)
	u.rules(s.Rare().Rewrites.Request)
	u.rules(s.Rare().Rewrites.Response)
	return u.out
}

// ListenerLimits collects what listener l's own rules use.
func ListenerLimits(l *Listener, detached []*Detached) Limits {
	u := limitsWalk{detached: detached}
	u.rules(l.Rewrites.Request)
	u.rules(l.Rewrites.Response)
	return u.out
}

type limitsWalk struct {
	detached []*Detached
	// seen holds the filters, files and detached conditions met; made
	// at the first, as most services have none and the dashboard's
	// sampler walks every service each second.
	seen map[any]bool
	out  Limits
}

// first marks x seen; it reports whether x was new.
func (u *limitsWalk) first(x any) bool {
	if u.seen[x] {
		return false
	}
	if u.seen == nil {
		u.seen = map[any]bool{}
	}
	u.seen[x] = true
	return true
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
		case c.Rare().TBF != nil && u.first(c.Rare().TBF):
			u.out.TBFs = append(u.out.TBFs, c.Rare().TBF)
		case c.Kind == CondACL && c.Rare().ACL != nil && u.first(c.Rare().ACL):
			u.out.ACLs = append(u.out.ACLs, c.Rare().ACL)
		case c.Rare().Auth != nil && u.first(c.Rare().Auth):
			u.out.Files = append(u.out.Files, c.Rare().Auth)
		case c.Kind == CondEval:
			for _, d := range u.detached {
				if d.Name == c.Name && u.first(d) {
					u.conds(d.Conds)
				}
			}
		}
		u.conds(c.Sub)
	}
}
