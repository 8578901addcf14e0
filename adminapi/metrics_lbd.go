package adminapi

import (
	"strconv"

	"lbd/internal/metrics"
)

// lbd's own families, in Prometheus naming (counters end in _total, units
// in the name, durations in seconds). Unlike Pound's they are meant to
// pass `promtool check metrics`; they share Pound's listener, service and
// backend labels so the two families join.
var lbdFamilies = []metricFamily{
	{name: "lbd_build_info", typ: "gauge", help: "Always 1; the labels say which lbd this is and the Go release it was built with."},
	{name: "lbd_start_time_seconds", typ: "gauge", unit: "seconds", help: "When this process started, in seconds since the Unix epoch."},
	{name: "lbd_started_by_upgrade", typ: "gauge", help: "1 when this process took over from a previous one by a binary upgrade, 0 when it started afresh."},
	{name: "lbd_upgrades", typ: "counter", help: "Binary upgrades that led to this process; each process hands the count to the next, so it survives the upgrades it counts."},
	{name: "lbd_reloads", typ: "counter", help: "Reloads of the configuration file (SIGHUP, the control API), by result: success or failure."},
	{name: "lbd_auth_decisions", typ: "counter", help: "Requests an edge authentication block (JWTAuth, APIKeyAuth, ForwardAuth) let through (pass) or refused (refuse) in a service's Authenticate."},
	{name: "lbd_listener_connections", typ: "gauge", help: "Client connections a listener has open now."},
	{name: "lbd_listener_request_duration_seconds", typ: "histogram", unit: "seconds", help: "Time from the request head's arrival to the end of the response, per listener."},
	{name: "lbd_listener_responses", typ: "counter", help: "Responses sent by a listener, by status class (lbd's own replies included)."},
	{name: "lbd_listener_grpc_responses", typ: "counter", help: "gRPC responses sent by a listener (its backends' and lbd's own), by grpc-status code."},
	{name: "lbd_tbf_decisions", typ: "counter", help: "Requests a TBF condition let through (allow) or refused (refuse), per listener or service and TBF."},
	{name: "lbd_acl_decisions", typ: "counter", help: "ACL conditions evaluated, per listener or service and ACL, by decision: match (the client is in the list) or nomatch."},
	{name: "lbd_service_state", typ: "gauge", help: "State of a service: up (enabled, a backend can take requests), down (enabled, none can) or disabled; 1 for the current state."},
	{name: "lbd_service_request_duration_seconds", typ: "histogram", unit: "seconds", help: "Time from the request head's arrival to the end of the response, per service."},
	{name: "lbd_service_responses", typ: "counter", help: "Responses to the requests a service matched, by status class."},
	{name: "lbd_service_sessions", typ: "gauge", help: "Sessions in a service's session table."},
	{name: "lbd_service_sessions_created", typ: "counter", help: "Sessions a service's table added."},
	{name: "lbd_service_sessions_expired", typ: "counter", help: "Sessions a service's table dropped for being idle longer than the TTL."},
	{name: "lbd_service_cache_requests", typ: "counter", help: "Requests a service's shared cache decided, by result: hit (served stored, stale ones included), miss, revalidation, pass (not for the cache: an unsafe method, a range...)."},
	{name: "lbd_service_cache_stale", typ: "counter", help: "Stale responses a service's shared cache served (max-stale, stale-while-revalidate, stale-if-error)."},
	{name: "lbd_service_cache_coalesced", typ: "counter", help: "Misses of a service's shared cache that waited for another request of the same key instead of going to a backend."},
	{name: "lbd_service_cache_stores", typ: "counter", help: "Responses a service's shared cache stored."},
	{name: "lbd_service_cache_evictions", typ: "counter", help: "Keys a service's shared cache evicted to stay within its budget."},
	{name: "lbd_service_cache_purges", typ: "counter", help: "Keys removed from a service's shared cache through the control API."},
	{name: "lbd_service_cache_bytes", typ: "gauge", unit: "bytes", help: "Memory a service's shared cache holds (objects, keys, bookkeeping)."},
	{name: "lbd_service_cache_budget_bytes", typ: "gauge", unit: "bytes", help: "The memory budget of a service's shared cache (Cache)."},
	{name: "lbd_service_cache_objects", typ: "gauge", help: "Keys stored in a service's shared cache."},
	{name: "lbd_backend_state", typ: "gauge", help: "State of a backend: up (enabled and alive), down (enabled, dead) or disabled; 1 for the current state."},
	{name: "lbd_backend_request_duration_seconds", typ: "histogram", unit: "seconds", help: "Time from the request head's arrival to the end of the backend's response, for the requests the backend answered."},
	{name: "lbd_backend_responses", typ: "counter", help: "Responses relayed from a backend, by status class."},
	{name: "lbd_backend_h2_streams", typ: "counter", help: "Requests sent to an HTTP/2 backend, by path: frames (an HTTP/2 client's stream relayed frame by frame) or transport (an HTTP/1.1 client's request, through the HTTP/2 client library)."},
	{name: "lbd_backend_health_checks", typ: "counter", help: "Health checks of a backend (TCP connects to it or its HAport), by result: success or failure."},
	{name: "lbd_backend_health_check_duration_seconds", typ: "histogram", unit: "seconds", help: "Duration of a backend's health checks, failed ones included."},
	{name: "lbd_backend_connect_duration_seconds", typ: "histogram", unit: "seconds", help: "Time to connect to a backend (request dials and health probes)."},
}

func init() { metricFamilies = append(metricFamilies, lbdFamilies...) }

// stateNames are the values of the state label of lbd_*_state.
var stateNames = [...]string{"up", "down", "disabled"}

// lbdCore adds the process-wide lbd families.
func (e *exposition) lbdCore(c *Core) {
	e.add("lbd_build_info", "", [][2]string{{"version", c.Version}, {"goversion", c.GoVersion}}, "1")
	start := c.Timestamp.Add(-c.Uptime)
	e.add("lbd_start_time_seconds", "", nil, strconv.FormatFloat(float64(start.UnixMicro())/1e6, 'f', -1, 64))
	e.add("lbd_started_by_upgrade", "", nil, boolValue(c.StartedByUpgrade))
	e.add("lbd_upgrades", "_total", nil, strconv.FormatUint(c.Upgrades, 10))
	e.add("lbd_reloads", "_total", [][2]string{{"result", "success"}}, strconv.FormatUint(c.Reloads, 10))
	e.add("lbd_reloads", "_total", [][2]string{{"result", "failure"}}, strconv.FormatUint(c.ReloadFailures, 10))
	for _, a := range c.Auth {
		l := [][2]string{{"auth", a.Name}, {"kind", a.Kind}}
		e.add("lbd_auth_decisions", "_total", with(l, "decision", "pass"), strconv.FormatUint(a.Passed, 10))
		e.add("lbd_auth_decisions", "_total", with(l, "decision", "refuse"), strconv.FormatUint(a.Refused, 10))
	}
}

// lbdListener adds a listener's request families (none for the control
// socket's, which records nothing).
func (e *exposition) lbdListener(lbl [][2]string, l *Listener) {
	if l.Requests.Duration.Bounds != nil {
		e.add("lbd_listener_connections", "", lbl, strconv.FormatInt(l.Connections, 10))
	}
	e.requests("lbd_listener", lbl, &l.Requests)
	for code, n := range l.GRPCStatus {
		if n > 0 {
			e.add("lbd_listener_grpc_responses", "_total", with(lbl, "code", strconv.Itoa(code)), strconv.FormatInt(n, 10))
		}
	}
	e.tbfs(lbl, l.Limits.RateLimits)
	e.acls(lbl, l.Limits.ACLs)
}

// tbfs adds the decisions of the TBF conditions of one scope; tbf is the
// condition's index there (two may share a key).
func (e *exposition) tbfs(lbl [][2]string, rls []RateLimit) {
	if !e.wants("lbd_tbf_decisions") {
		return
	}
	for i := range rls {
		r := &rls[i]
		l := append(with(lbl, "tbf", strconv.Itoa(i)), [2]string{"key", r.Key})
		e.add("lbd_tbf_decisions", "_total", with(l, "decision", "allow"), strconv.FormatUint(r.Allowed, 10))
		e.add("lbd_tbf_decisions", "_total", with(l, "decision", "refuse"), strconv.FormatUint(r.Refused, 10))
	}
}

// acls adds the decisions of the ACL conditions of one scope; acl is the
// list's index there, acl_name its name when it has one.
func (e *exposition) acls(lbl [][2]string, as []ACLStats) {
	if !e.wants("lbd_acl_decisions") {
		return
	}
	for i := range as {
		a := &as[i]
		l := withName(with(lbl, "acl", strconv.Itoa(i)), "acl_name", a.Name)
		e.add("lbd_acl_decisions", "_total", with(l, "decision", "match"), strconv.FormatUint(a.Match, 10))
		e.add("lbd_acl_decisions", "_total", with(l, "decision", "nomatch"), strconv.FormatUint(a.NoMatch, 10))
	}
}

// lbdService adds a service's state and request families.
func (e *exposition) lbdService(lbl [][2]string, s *Service) {
	state := "disabled"
	if s.Enabled {
		state = "down"
		for i := range s.Backends {
			if b := &s.Backends[i]; b.Kind != KindMatrix && b.Enabled && b.Alive {
				state = "up"
				break
			}
		}
	}
	e.stateset("lbd_service_state", lbl, state)
	e.requests("lbd_service", lbl, &s.Requests)
	e.tbfs(lbl, s.Limits.RateLimits)
	e.acls(lbl, s.Limits.ACLs)
	if c := s.Cache; c != nil {
		for _, r := range [...]struct {
			result string
			n      int64
		}{{"hit", c.Hits}, {"miss", c.Misses}, {"revalidation", c.Revalidations}, {"pass", c.Passes}} {
			e.add("lbd_service_cache_requests", "_total", append(lbl[:len(lbl):len(lbl)], [2]string{"result", r.result}), strconv.FormatInt(r.n, 10))
		}
		e.add("lbd_service_cache_stale", "_total", lbl, strconv.FormatInt(c.Stale, 10))
		e.add("lbd_service_cache_coalesced", "_total", lbl, strconv.FormatInt(c.Coalesced, 10))
		e.add("lbd_service_cache_stores", "_total", lbl, strconv.FormatInt(c.Stores, 10))
		e.add("lbd_service_cache_evictions", "_total", lbl, strconv.FormatInt(c.Evictions, 10))
		e.add("lbd_service_cache_purges", "_total", lbl, strconv.FormatInt(c.Purged, 10))
		e.add("lbd_service_cache_bytes", "", lbl, strconv.FormatInt(c.Bytes, 10))
		e.add("lbd_service_cache_budget_bytes", "", lbl, strconv.FormatInt(c.Budget, 10))
		e.add("lbd_service_cache_objects", "", lbl, strconv.Itoa(c.Objects))
	}
	if s.SessionType != "" && s.SessionType != "NONE" {
		// A Summary has only the count, a full State the list.
		e.add("lbd_service_sessions", "", lbl, strconv.Itoa(max(s.SessionCount, len(s.Sessions))))
		e.add("lbd_service_sessions_created", "_total", lbl, strconv.FormatUint(s.SessionsCreated, 10))
		e.add("lbd_service_sessions_expired", "_total", lbl, strconv.FormatUint(s.SessionsExpired, 10))
	}
}

// lbdBackend adds a backend's state and, for a regular backend, its
// request families.
func (e *exposition) lbdBackend(lbl [][2]string, b *Backend) {
	if b.Kind == KindMatrix {
		return // a template: its backends are listed on their own
	}
	state := "disabled"
	switch {
	case b.Enabled && b.Alive:
		state = "up"
	case b.Enabled:
		state = "down"
	}
	e.stateset("lbd_backend_state", lbl, state)
	if b.Durations.Bounds == nil {
		return
	}
	e.histogram("lbd_backend_request_duration_seconds", lbl, &b.Durations)
	e.codes("lbd_backend_responses", lbl, [6]uint64{0, uint64(b.Hits1xx), uint64(b.Hits2xx), uint64(b.Hits3xx), uint64(b.Hits4xx), uint64(b.Hits5xx)})
	e.histogram("lbd_backend_connect_duration_seconds", lbl, &b.ConnectDurations)
	if e.wants("lbd_backend_health_checks") {
		e.add("lbd_backend_health_checks", "_total", with(lbl, "result", "success"), strconv.FormatUint(b.ProbesPassed, 10))
		e.add("lbd_backend_health_checks", "_total", with(lbl, "result", "failure"), strconv.FormatUint(b.ProbesFailed, 10))
	}
	e.histogram("lbd_backend_health_check_duration_seconds", lbl, &b.ProbeDurations)
	if h2 := b.H2Streams; h2 != nil && e.wants("lbd_backend_h2_streams") {
		e.add("lbd_backend_h2_streams", "_total", with(lbl, "path", "frames"), strconv.FormatUint(h2[0], 10))
		e.add("lbd_backend_h2_streams", "_total", with(lbl, "path", "transport"), strconv.FormatUint(h2[1], 10))
	}
}

// requests adds prefix_request_duration_seconds and prefix_responses_total.
func (e *exposition) requests(prefix string, lbl [][2]string, r *RequestStats) {
	if r.Duration.Bounds == nil {
		return
	}
	e.histogram(prefix+"_request_duration_seconds", lbl, &r.Duration)
	e.codes(prefix+"_responses", lbl, r.Codes)
}

// stateset adds one sample per state name, 1 for cur and 0 for the others.
func (e *exposition) stateset(fam string, lbl [][2]string, cur string) {
	if !e.wants(fam) {
		return
	}
	for _, s := range stateNames {
		e.add(fam, "", with(lbl, "state", s), boolValue(s == cur))
	}
}

// codes adds the 1xx..5xx counters of a status class family.
func (e *exposition) codes(fam string, lbl [][2]string, n [6]uint64) {
	if !e.wants(fam) {
		return
	}
	for class := 1; class <= 5; class++ {
		e.add(fam, "_total", with(lbl, "code", strconv.Itoa(class)+"xx"), strconv.FormatUint(n[class], 10))
	}
}

// histogram adds the buckets, count and sum of a duration histogram.
func (e *exposition) histogram(fam string, lbl [][2]string, h *metrics.HistogramSnapshot) {
	if !e.wants(fam) {
		return
	}
	for i, b := range h.Bounds {
		if i < len(h.Buckets) {
			e.add(fam, "_bucket", with(lbl, "le", promSeconds(b)), strconv.FormatUint(h.Buckets[i], 10))
		}
	}
	e.add(fam, "_bucket", with(lbl, "le", "+Inf"), strconv.FormatUint(h.Count, 10))
	e.add(fam, "_count", lbl, strconv.FormatUint(h.Count, 10))
	e.add(fam, "_sum", lbl, promSeconds(h.Sum))
}
