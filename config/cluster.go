package config

import (
	"net"
	"strconv"
	"strings"

	"lbd/parser"
)

// Cluster is lbd's Cluster section (an extension of both dialects):
// several instances share their session tables and runtime state through
// Redis. A configuration without one runs alone, exactly as before.
type Cluster struct {
	Pos Locus `json:"pos"`
	// Node names this instance in the cluster ("" = the host name).
	Node string `json:"node,omitempty"`
	// Redis is a standalone server: host:port, or a UNIX socket path.
	Redis string `json:"redis,omitempty"`
	// Sentinels are Redis Sentinel addresses (host:port) and Master the
	// name of the master they watch; used instead of Redis.
	Sentinels []string `json:"sentinels,omitempty"`
	Master    string   `json:"master,omitempty"`
	// Username and Password authenticate to Redis (and to the Sentinels).
	Username string `json:"username,omitempty"`
	Password string `json:"-"`
	// Database is the Redis database number.
	Database int `json:"database"`
	// KeyPrefix starts every Redis key and channel name, so that several
	// clusters can share one Redis (default "lbd").
	KeyPrefix string `json:"key_prefix"`
	// ShareSessions names the services whose session tables are shared;
	// ShareAll shares every service that keeps sessions.
	ShareSessions []string `json:"share_sessions,omitempty"`
	ShareAll      bool     `json:"share_all,omitempty"`
	// TLS, when set, speaks TLS to Redis and to the Sentinels, always
	// verifying their certificates: without it the password and every
	// session cross the network in clear text.
	TLS *ClusterTLS `json:"tls,omitempty"`
}

// ClusterTLS is the TLS of the connections to Redis and the Sentinels.
type ClusterTLS struct {
	// CA verifies the servers' certificates (nil: the system's roots).
	CA *FileData `json:"ca,omitempty"`
	// Cert is the client certificate with its key (nil: none).
	Cert *CertFile `json:"cert,omitempty"`
	// ServerName is the name the certificates must carry ("": the host
	// of each address dialled).
	ServerName string `json:"server_name,omitempty"`
}

// DefaultKeyPrefix starts the cluster's Redis keys without a KeyPrefix.
const DefaultKeyPrefix = "lbd"

// maxClusterName bounds Node and KeyPrefix: they travel in every message.
const maxClusterName = 64

// Shares reports whether the service named name shares its sessions.
func (c *Cluster) Shares(name string) bool {
	if c.ShareAll {
		return true
	}
	for _, n := range c.ShareSessions {
		if n == name {
			return true
		}
	}
	return false
}

var clusterTable = table[*Cluster]{}

func initClusterTable() {
	t := clusterTable
	t.add("Node", "s", func(b *builder, c *Cluster, _ *parser.Node, u []unit) {
		if b.clusterName(u[0].arg) {
			c.Node = u[0].arg.Text
		}
	})
	t.add("Redis", "s", func(b *builder, c *Cluster, _ *parser.Node, u []unit) {
		if b.redisAddress(u[0].arg, true) {
			c.Redis = u[0].arg.Text
		}
	})
	t.add("Sentinel", "s+", func(b *builder, c *Cluster, _ *parser.Node, u []unit) {
		for _, x := range u {
			if b.redisAddress(x.arg, false) {
				c.Sentinels = append(c.Sentinels, x.arg.Text)
			}
		}
	})
	t.add("Master", "s", func(_ *builder, c *Cluster, _ *parser.Node, u []unit) { c.Master = u[0].arg.Text })
	t.add("Username", "s", func(_ *builder, c *Cluster, _ *parser.Node, u []unit) { c.Username = u[0].arg.Text })
	t.add("Password", "s", func(_ *builder, c *Cluster, _ *parser.Node, u []unit) { c.Password = u[0].arg.Text })
	t.add("Database", "n", func(b *builder, c *Cluster, _ *parser.Node, u []unit) {
		if n, ok := b.intArg(u[0].arg, 0, maxInt); ok {
			c.Database = int(n)
		}
	})
	t.add("KeyPrefix", "s", func(b *builder, c *Cluster, _ *parser.Node, u []unit) {
		if b.clusterName(u[0].arg) {
			c.KeyPrefix = u[0].arg.Text
		}
	})
	t.add("TLS", "b", func(_ *builder, c *Cluster, _ *parser.Node, u []unit) {
		if boolArg(u[0]) {
			c.TLS = &ClusterTLS{}
		}
	})
	// The files are read once the section is complete (clusterTLS): the
	// key may come before or after the certificate.
	for _, name := range []string{"CAFile", "ClientCert", "ClientKey", "ServerName"} {
		t.add(name, "s", func(*builder, *Cluster, *parser.Node, []unit) {})
	}
	t.add("ShareSessions", "[sl]+", func(b *builder, c *Cluster, _ *parser.Node, u []unit) {
		for _, x := range u {
			switch {
			case x.arg.Kind == parser.String:
				c.ShareSessions = append(c.ShareSessions, x.arg.Text)
			case strings.EqualFold(x.arg.Text, "all"):
				c.ShareAll = true
			default:
				b.errorf(x.arg.Span, "expected a quoted service name or all")
			}
		}
	})
}

// clusterName checks a Node or KeyPrefix: 1 to 64 letters, digits, '.',
// '_' or '-', so that it reads unquoted in logs and in redis-cli.
func (b *builder) clusterName(a parser.Arg) bool {
	ok := a.Text != "" && len(a.Text) <= maxClusterName
	for i := 0; ok && i < len(a.Text); i++ {
		c := a.Text[i]
		ok = c == '.' || c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	if !ok {
		b.errorf(a.Span, "invalid name: want 1 to %d letters, digits, '.', '_' or '-'", maxClusterName)
	}
	return ok
}

// redisAddress checks host:port (a port from 1 to 65535), or (unixOK)
// an absolute socket path.
func (b *builder) redisAddress(a parser.Arg, unixOK bool) bool {
	if unixOK && strings.HasPrefix(a.Text, "/") {
		return true
	}
	what, want := "Sentinel", "host:port"
	if unixOK {
		what, want = "Redis", "host:port or /path/to/socket"
	}
	host, port, err := net.SplitHostPort(a.Text)
	if err != nil || host == "" || port == "" {
		b.errorf(a.Span, "invalid %s address %q: want %s", what, a.Text, want)
		return false
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		b.errorf(a.Span, "invalid %s address %q: port %q is not a number from 1 to 65535", what, a.Text, port)
		return false
	}
	return true
}

// globalCluster builds the Cluster section.
func globalCluster(b *builder, c *Config, n *parser.Node, _ []unit) {
	if c.Cluster != nil {
		b.errorf(stmtSpan(n), "Cluster redefined")
		b.followf(c.Cluster.Pos.Span(), "original definition was here")
		return
	}
	cl := &Cluster{Pos: LocusOf(stmtSpan(n)), KeyPrefix: DefaultKeyPrefix}
	walk(b, clusterTable, nil, cl, n.Children)
	// A Redis or Sentinel statement with a bad address was reported
	// where it is; the section does not lack it.
	redis, sentinel := cl.Redis != "", len(cl.Sentinels) > 0
	for _, ch := range n.Children {
		redis = redis || ch.Is("Redis")
		sentinel = sentinel || ch.Is("Sentinel")
	}
	switch {
	case !redis && !sentinel:
		b.errorf(stmtSpan(n), "Cluster section has neither Redis nor Sentinel")
		return
	case redis && sentinel:
		b.errorf(stmtSpan(n), "Cluster section has both Redis and Sentinel")
		return
	case sentinel && cl.Master == "":
		b.errorf(stmtSpan(n), "Cluster section with Sentinel needs Master")
		return
	case cl.Master != "" && !sentinel:
		b.errorf(stmtSpan(n), "Master is only used with Sentinel")
		return
	}
	if !b.clusterTLS(cl, n) {
		return
	}
	c.Cluster = cl
}
