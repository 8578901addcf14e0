package adminapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// CacheController is implemented by a server whose services can have a
// shared HTTP cache (package cache): the control API's /cache endpoint.
type CacheController interface {
	// PurgeCache removes what every cached service stored for host and
	// target (prefix: every target that starts with it) and returns how
	// many keys it removed.
	PurgeCache(host, target string, prefix bool) (int, error)
	// CacheStats lists the cached services and their counters.
	CacheStats() []CacheStat
}

// CacheStat is one cached service's counters (GET /cache).
type CacheStat struct {
	Listener      int    `json:"listener"` // State index; -1: a global service
	Service       int    `json:"service"`
	Name          string `json:"name,omitempty"`
	Budget        int64  `json:"budget"`
	Bytes         int64  `json:"bytes"`
	Objects       int    `json:"objects"`
	Hits          int64  `json:"hits"`
	Misses        int64  `json:"misses"`
	Stale         int64  `json:"stale"`
	Revalidations int64  `json:"revalidations"`
	Passes        int64  `json:"passes"`
	Stores        int64  `json:"stores"`
	Evictions     int64  `json:"evictions"`
	Purged        int64  `json:"purged"`
	Coalesced     int64  `json:"coalesced"`
}

// PurgeQuery is the body of POST /cache/purge.
type PurgeQuery struct {
	URL    string `json:"url"`
	Prefix bool   `json:"prefix,omitempty"`
}

// PurgeReply answers it.
type PurgeReply struct {
	Result string `json:"result"`
	Purged int    `json:"purged"`
}

// maxPurgeBody bounds a POST /cache/purge body.
const maxPurgeBody = 16 << 10

func ownsCache(p string) bool { return p == "/cache" || p == "/cache/" || p == "/cache/purge" }

// cache serves GET /cache (the counters of every cached service, the
// listener numbered as the socket numbers it) and POST /cache/purge.
func (x *lbdExtensions) cache(w http.ResponseWriter, r *http.Request) {
	cc, ok := x.c.(CacheController)
	if !ok {
		writeJSONError(w, http.StatusNotImplemented, "this server has no cache")
		return
	}
	if strings.ToLower(r.URL.Path) == "/cache/purge" {
		x.purge(w, r, cc)
		return
	}
	if r.Method != http.MethodGet {
		writeJSONError(w, http.StatusMethodNotAllowed, "use GET /cache, or POST /cache/purge with a JSON query")
		return
	}
	st := x.c.State()
	stats := cc.CacheStats()
	for i := range stats {
		if stats[i].Listener >= 0 {
			stats[i].Listener = x.num.number(st, stats[i].Listener)
		}
	}
	if stats == nil {
		stats = []CacheStat{}
	}
	body, err := json.MarshalIndent(stats, "", "  ")
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, append(body, '\n'))
}

// purge is POST /cache/purge: {"url": "http://host/path", "prefix": bool}.
func (x *lbdExtensions) purge(w http.ResponseWriter, r *http.Request, cc CacheController) {
	if r.Method != http.MethodPost {
		writeJSONError(w, http.StatusMethodNotAllowed, "use POST /cache/purge with a JSON query")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPurgeBody+1))
	if err != nil || len(body) > maxPurgeBody {
		writeJSONError(w, http.StatusRequestEntityTooLarge, "the query is too large")
		return
	}
	var q PurgeQuery
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		writeJSONError(w, http.StatusBadRequest, "malformed query: "+err.Error())
		return
	}
	host, target, e := purgeTarget(q.URL)
	if e != "" {
		writeJSONError(w, http.StatusBadRequest, e)
		return
	}
	n, err := cc.PurgeCache(host, target, q.Prefix)
	if err != nil {
		writeJSONError(w, statusOf(err), err.Error())
		return
	}
	reply, err := json.Marshal(PurgeReply{Result: "ok", Purged: n})
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, append(reply, '\n'))
}

// purgeTarget splits an absolute http(s) URL into the host (as the
// requests' Host carries it) and the target (path and query).
func purgeTarget(raw string) (host, target, problem string) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", `the query needs an absolute "url" (http://host/path)`
	}
	target = u.EscapedPath()
	if target == "" {
		target = "/"
	}
	if u.RawQuery != "" || u.ForceQuery {
		target += "?" + u.RawQuery
	}
	return u.Host, target, ""
}
