package sockio

import "net"

// KeepAlive turns TCP keep-alive probes on with the kernel's own timing
// (net.ipv4.tcp_keepalive_*), which is what Pound does for client and
// backend sockets. Go's default would set 15 s probes instead, with three
// more setsockopt calls per connection.
var KeepAlive = net.KeepAliveConfig{Enable: true, Idle: -1, Interval: -1, Count: -1}
