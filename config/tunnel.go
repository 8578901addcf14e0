package config

import "lbd/parser"

// A Tunnel block is a listener that relays bytes to its backends without
// reading them. Pound allows Address, Port and SocketFrom in it and a
// single Backend with Address, Port, TimeOut, ConnTO and Disabled; lbd
// also takes several Backend blocks, Emergency blocks and Priority and
// HAport in them, balanced as a service's backends are.

var (
	tunnelTable        = table[*Listener]{}
	tunnelBackendTable = table[*Backend]{}
)

func initTunnelTables() {
	for _, k := range []string{"address", "port", "socketfrom"} {
		tunnelTable[k] = httpTable[k]
	}
	tunnelTable.add("Backend", "", func(b *builder, l *Listener, n *parser.Node, _ []unit) {
		b.tunnelBackend(l, n, false)
	}).block()
	tunnelTable.add("Emergency", "", func(b *builder, l *Listener, n *parser.Node, _ []unit) {
		b.tunnelBackend(l, n, true)
	}).block()
	for _, k := range []string{"address", "port", "timeout", "connto", "disabled", "priority", "haport"} {
		tunnelBackendTable[k] = beTable[k]
	}
}

// tunnel builds a Tunnel block: a listener whose one unnamed service
// holds the backends.
func (b *builder) tunnel(n *parser.Node, u []unit) {
	l := &Listener{Pos: LocusOf(stmtSpan(n)), Tunnel: true, RewriteLoc: 1}
	if len(u) > 0 {
		l.Name = u[0].arg.Text
	}
	svc := &Service{Pos: LocusOf(stmtSpan(n)), Backends: []*Backend{}}
	b.svcs[svc] = &serviceExtra{cond: &condCtx{conds: &svc.Conditions}}
	l.Services = []*Service{svc}
	ex := &listenerExtra{}
	b.lst[l] = ex
	walk(b, tunnelTable, nil, l, n.Children)
	if len(svc.Backends) == 0 {
		b.errorf(stmtSpan(n), "no backend defined")
	}
	b.listenerAddress(l, ex)
	b.cfg.Listeners = append(b.cfg.Listeners, l)
}

// tunnelBackend adds a Backend or Emergency block of a tunnel. Its
// Priority defaults to 1, as Pound gives its tunnel backend.
func (b *builder) tunnelBackend(l *Listener, n *parser.Node, emergency bool) {
	be := b.newBackend(n)
	be.Priority, be.Emergency = 1, emergency
	walk(b, tunnelBackendTable, nil, be, n.Children)
	if be.Address == "" {
		b.errorf(stmtSpan(n), "Backend missing Address declaration")
		return
	}
	b.backendAddress(be, n)
	svc := l.Services[0]
	if emergency {
		svc.SetRare().Emergency = append(svc.Rare().Emergency, be)
	} else {
		svc.Backends = append(svc.Backends, be)
	}
}
