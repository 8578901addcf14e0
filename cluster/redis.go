package cluster

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"lbd/config"
)

// ioTimeout bounds every exchange with Redis: none is on the request
// path, and this is as long as a background step waits before it counts
// Redis as down.
const ioTimeout = 500 * time.Millisecond

// newClient connects to the standalone server or through the Sentinels.
// Retries are the cluster's business (it reconciles), not the client's.
func newClient(c *config.Cluster) redis.UniversalClient {
	common := func(o *redis.Options) {
		o.Username, o.Password, o.DB = c.Username, c.Password, c.Database
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = ioTimeout, ioTimeout, ioTimeout, ioTimeout
		o.MaxRetries = -1
		o.Protocol = 2
		o.DisableIdentity = true
		o.PoolSize = 4
		o.TLSConfig = tlsConfig(c.TLS)
	}
	if len(c.Sentinels) > 0 {
		fo := &redis.FailoverOptions{
			MasterName: c.Master, SentinelAddrs: c.Sentinels,
			Username: c.Username, Password: c.Password, DB: c.Database,
			SentinelUsername: c.Username, SentinelPassword: c.Password,
			DialTimeout: ioTimeout, ReadTimeout: ioTimeout, WriteTimeout: ioTimeout, PoolTimeout: ioTimeout,
			MaxRetries: -1, Protocol: 2, DisableIdentity: true, PoolSize: 4,
			// go-redis dials the Sentinels and the master with the same
			// TLS configuration.
			TLSConfig: tlsConfig(c.TLS),
		}
		return redis.NewFailoverClient(fo)
	}
	o := &redis.Options{Addr: c.Redis}
	if strings.HasPrefix(c.Redis, "/") {
		o.Network = "unix"
	}
	common(o)
	return redis.NewClient(o)
}

// keys names what the cluster keeps in Redis, under one prefix:
//
//	P:state   hash: runtime-state field -> stored state record
//	P:nodes   hash: node name -> Unix milliseconds of its last heartbeat
//	P:epoch   a random value set by the first instance to reconcile: if
//	          it vanishes, Redis lost its data and every instance sends
//	          its state again
//	P:s:...   one string per shared session, expiring with it
//	P:ch      the Pub/Sub channel of every message
type keys struct {
	state, nodes, epoch, channel, sessions string
}

func newKeys(prefix string) keys {
	return keys{
		state: prefix + ":state", nodes: prefix + ":nodes", epoch: prefix + ":epoch",
		channel: prefix + ":ch", sessions: prefix + ":s:",
	}
}

// servicePrefix starts the keys of one service's sessions: the listener
// and service names as netstrings ("5:front3:web:"), so no two services
// share a prefix.
func (k keys) servicePrefix(listener, service string) string {
	return k.sessions + strconv.Itoa(len(listener)) + ":" + listener + strconv.Itoa(len(service)) + ":" + service + ":"
}

// globEscape quotes the characters SCAN MATCH treats as patterns.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// casLua compares two stored values (see storedValue) by their order
// keys, byte by byte, as Stamp.After does in Go.
const casLua = `
local function okey(v)
  local n = string.byte(v, 1)
  return string.sub(v, 2, 1 + n)
end
local function later(a, b)
  local la, lb = #a, #b
  for i = 1, math.min(la, lb) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return la > lb
end
`

// setScript stores ARGV[1] under KEYS[1] unless the value there is later;
// ARGV[2] is the expiry in milliseconds (0: none). 1 if stored.
var setScript = redis.NewScript(casLua + `
local cur = redis.call('GET', KEYS[1])
if cur and not later(okey(ARGV[1]), okey(cur)) then return 0 end
if tonumber(ARGV[2]) > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
else
  redis.call('SET', KEYS[1], ARGV[1])
end
return 1
`)

// hsetScript is setScript for field ARGV[2] of the hash KEYS[1].
var hsetScript = redis.NewScript(casLua + `
local cur = redis.call('HGET', KEYS[1], ARGV[2])
if cur and not later(okey(ARGV[1]), okey(cur)) then return 0 end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[1])
return 1
`)

// delScript deletes KEYS[1] if it still holds ARGV[1].
var delScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// loadScripts makes sure Redis knows the scripts (after a restart it
// does not), so that pipelines can call them by hash.
func loadScripts(ctx context.Context, c redis.UniversalClient) error {
	for _, s := range []*redis.Script{setScript, hsetScript, delScript} {
		if err := s.Load(ctx, c).Err(); err != nil {
			return err
		}
	}
	return nil
}

// NewClient connects to the cluster's Redis as the Node does (the same
// servers, credentials and TLS), for other users of the cluster's Redis:
// the automatic certificates' storage (package acmecert).
func NewClient(c *config.Cluster) redis.UniversalClient { return newClient(c) }
