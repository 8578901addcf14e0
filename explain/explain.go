// Package explain is the model of lbd's routing explainer: the question
// (a request that might arrive) and the answer (which listener, service
// and backend would take it, and why), as the control API's POST /route
// sends it and lbctl route prints it.
//
// The package is a leaf: rules, balancer and proxy fill these types in a
// dry run that changes nothing, adminapi encodes them and lbctl decodes
// and prints them (Write), so the three agree on one definition.
package explain

// Query is a request to explain.
type Query struct {
	Method string `json:"method"`
	// URL is an origin-form target ("/path?q") or an absolute URL
	// ("http://host:port/path"), whose host becomes the Host header
	// unless Headers has one.
	URL string `json:"url"`
	// Headers are "Name: value" lines, sent in this order.
	Headers []string `json:"headers,omitempty"`
	// Client is the client address ("" means 127.0.0.1): IP sessions,
	// ACLs and X-Forwarded-For see it.
	Client string `json:"client,omitempty"`
	// Listener is the listener's number or name; "" chooses one from the
	// URL (see Listener.Why). On the control API the number is the
	// socket's (the Pound socket counts its control socket as 0, the
	// zproxy socket does not); the API hands the engine the index in
	// its State.Listeners.
	Listener string `json:"listener,omitempty"`
}

// Route is the explanation of one request.
type Route struct {
	Request  Request  `json:"request"`
	Listener Listener `json:"listener"`
	// Checks are what the listener verifies before routing, in order;
	// the first that fails ends the explanation with its Reply.
	Checks []Check `json:"checks"`
	// Services are the listener's services and then the global ones, in
	// the order they are tried, each with the conditions evaluated.
	Services []Service `json:"services"`
	// Service is the index in Services of the service chosen (nil: none).
	Service *int     `json:"service"`
	Session *Session `json:"session,omitempty"`
	// Balancer is the balancer's dry-run pick (nil when a live pinned
	// session or a special backend decided).
	Balancer *Balancer `json:"balancer,omitempty"`
	Backend  *Backend  `json:"backend,omitempty"`
	// Rewrites are the request rules the listener and the service would
	// run on the request (Pound's Rewrite, SetHeader ...), traced.
	Rewrites []Step `json:"rewrites,omitempty"`
	// Forwarded is the request head as it would go to Backend.
	Forwarded *Forwarded `json:"forwarded,omitempty"`
	// Reply is what lbd itself would answer when no backend takes the
	// request: an error page, a redirect, a special backend's answer.
	Reply *Reply `json:"reply,omitempty"`
	// Outcome says it in one line.
	Outcome string `json:"outcome"`
}

// Request is the request as the listener parsed it.
type Request struct {
	Method  string   `json:"method"`
	Target  string   `json:"target"`
	Version string   `json:"version"`
	Headers []string `json:"headers"`
	Client  string   `json:"client"`
}

// Listener is the listener that would receive the request.
type Listener struct {
	// Index numbers the listener as Query.Listener does.
	Index    int    `json:"index"`
	Name     string `json:"name,omitempty"`
	Address  string `json:"address"`
	Protocol string `json:"protocol"`
	Dialect  string `json:"dialect"`
	// Why says how it was chosen.
	Why string `json:"why"`
}

// Check is one check of the listener: it passed (OK) or ended the
// request.
type Check struct {
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Service is one service as the router met it.
type Service struct {
	Index  int    `json:"index"` // position among the tried services
	Name   string `json:"name,omitempty"`
	Global bool   `json:"global,omitempty"`
	Pos    string `json:"pos,omitempty"`
	// Verdict is "matched", "no match", "disabled", "fall through",
	// "error", "not tried" (an earlier service took the request) or
	// "skipped" (the routing index showed its first condition cannot
	// hold, so its conditions were not run; Skipped says which).
	Verdict    string `json:"verdict"`
	Skipped    string `json:"skipped,omitempty"`
	Conditions []Step `json:"conditions,omitempty"`
	// Rewrites are a FallThrough service's request rules, which run
	// before the search goes on.
	Rewrites []Step `json:"rewrites,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Step is one instruction a traced program ran: a condition tested, or
// an action applied. Conditions a decision made unnecessary are not
// evaluated and do not appear.
type Step struct {
	Test   string `json:"test,omitempty"`
	Action string `json:"action,omitempty"`
	Pos    string `json:"pos,omitempty"`
	// Subject is what the condition looked at (the path, the header's
	// value, the expanded string ...); nil when it has none.
	Subject *string `json:"subject,omitempty"`
	// Matched is the primitive test's result; Not inverts it into Holds
	// (a Not, or a condition under a Not block).
	Matched *bool  `json:"matched,omitempty"`
	Not     bool   `json:"not,omitempty"`
	Holds   *bool  `json:"holds,omitempty"`
	Detail  string `json:"detail,omitempty"`
	// Eval is the trace of a detached condition the first time the
	// request evaluates it (later Evals reuse the result).
	Eval  []Step `json:"eval,omitempty"`
	Error string `json:"error,omitempty"`
}

// Session is the session lookup of the chosen service.
type Session struct {
	Type string `json:"type"`
	ID   string `json:"id,omitempty"` // cookie, parameter or header name
	// Key is the request's session key; HasKey is false when the
	// request carries none (no session is looked up or created).
	Key    string `json:"key,omitempty"`
	HasKey bool   `json:"has_key"`
	// Found: the table has a live session for Key, pointing at Backend.
	Found    bool   `json:"found"`
	Backend  *int   `json:"backend,omitempty"`
	LastSeen string `json:"last_seen,omitempty"`
	Expires  string `json:"expires,omitempty"`
	Static   bool   `json:"static,omitempty"`
	// Pinned: the session's backend is available, so it takes the
	// request without asking the balancer.
	Pinned bool   `json:"pinned"`
	Why    string `json:"why"`
}

// Balancer is a dry-run pick: what Pick would return now, with the
// inputs it decides on, computed without moving any of its state.
type Balancer struct {
	Algorithm string `json:"algorithm"`
	// Mode is "pound" (Priority is the weight) or "zproxy" (Weight is
	// the weight, Priority a tier up to the service priority).
	Mode            string  `json:"mode"`
	ServicePriority int     `json:"service_priority,omitempty"`
	Groups          []Group `json:"groups"`
	// Chosen is the backend (index in the service's backends) picked.
	Chosen *int   `json:"chosen"`
	Why    string `json:"why"`
}

// Group is one balancer group: the regular backends, a group an SRV
// priority made, or the Emergency backends, tried in that order.
type Group struct {
	Tier       int         `json:"tier"`
	Emergency  bool        `json:"emergency,omitempty"`
	Candidates []Candidate `json:"candidates"`
	Why        string      `json:"why"`
}

// Candidate is one backend as the balancer sees it.
type Candidate struct {
	Backend  int    `json:"backend"`
	ID       string `json:"id"`
	Weight   int64  `json:"weight"`
	Priority int    `json:"priority"`
	Active   int64  `json:"active"`
	Pending  int64  `json:"pending"`
	// LatencyNS is the response-time average; -1 before any sample.
	LatencyNS int64 `json:"latency_ns"`
	ConnLimit int   `json:"conn_limit,omitempty"`
	// Eligible: in the balancer's current set (enabled, alive, weight
	// above 0, within the service priority); Reason says why not.
	Eligible bool   `json:"eligible"`
	Reason   string `json:"reason,omitempty"`
	// Available: eligible and below its ConnLimit right now.
	Available bool `json:"available"`
	// Share is the candidate's part of the requests (random, iwrr,
	// round robin) among the eligible ones of its group.
	Share float64 `json:"share,omitempty"`
	// Score is the value the least-* algorithms minimise, as a ratio
	// ("3/2" connections per weight).
	Score string `json:"score,omitempty"`
}

// Backend is the backend that would take the request.
type Backend struct {
	Index   int    `json:"index"`
	ID      string `json:"id"`
	Address string `json:"address"`
	// Via is "session" or "balancer".
	Via string `json:"via"`
}

// Forwarded is the request head lbd would send to the backend.
type Forwarded struct {
	RequestLine string   `json:"request_line"`
	Headers     []string `json:"headers"`
	// Added and Removed compare Headers with the received ones.
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// Reply is a response lbd would write itself.
type Reply struct {
	Status int `json:"status"`
	// Kind is "error", "redirect", "waf" (a WAF rule's deny), "no service", "no backend",
	// "purge" (the PURGE method, lbd's CachePurge), or the
	// special backend's kind (metrics, control, dashboard, file, acme,
	// success).
	Kind     string   `json:"kind"`
	Location string   `json:"location,omitempty"`
	Head     []string `json:"head,omitempty"`
	Body     string   `json:"body,omitempty"`
	Why      string   `json:"why"`
}
