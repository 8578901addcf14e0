package adminapi

import (
	"net"
	"strconv"
)

// A full listing of 20,000 backends built a sorted jobject of a dozen
// boxed members for each (~0.5 kB) only to print it: most of lbd's work
// for an lbctl list at that size (issue 36). A regular backend in Pound's
// compact style is printed directly instead, as the same bytes.

// jbackend is a backend in a listing: printed by appendRegularBackend in
// the compact Pound style when it is regular, as poundBackend otherwise.
type jbackend struct {
	b    *Backend
	opts poundOpts
}

// poundBackendValue is the value a listing holds for b.
func poundBackendValue(b *Backend, o poundOpts) any {
	if b.kind() == KindRegular {
		return jbackend{b, o}
	}
	return poundBackendOpts(b, o)
}

// poundBackendOpts is poundBackend with the members o asks for.
func poundBackendOpts(b *Backend, o poundOpts) jobject {
	obj := poundBackend(b, o.stats)
	if o.requests {
		obj = obj.add("requests", b.Requests)
		if b.ResponseTime >= 0 {
			obj = obj.add("response_time", jnumber(responseSeconds(b)))
		}
	}
	return obj
}

// responseSeconds is the backend's response time as the exposition's
// pound_backend_response_time_seconds prints it.
func responseSeconds(b *Backend) string {
	return strconv.FormatFloat(b.ResponseTime.Seconds(), 'g', -1, 64)
}

// backend prints a jbackend.
func (e *jsonEncoder) backend(x jbackend, level int) {
	if e.style != poundCompact || x.b.kind() != KindRegular {
		e.object(poundBackendOpts(x.b, x.opts), level)
		return
	}
	e.buf = appendRegularBackend(e.buf, x.b, x.opts)
}

// appendRegularBackend is poundBackendOpts's object for a regular
// backend as poundCompact prints it: its members in key order.
func appendRegularBackend(buf []byte, b *Backend, o poundOpts) []byte {
	stats := o.stats
	group := b.Group
	if b.Emergency {
		group = poundEmergencyGroup
	}
	buf = append(buf, `{"address":`...)
	if b.Port != 0 {
		buf = appendJSONString(buf, net.JoinHostPort(b.Address, strconv.Itoa(b.Port)))
	} else {
		buf = appendJSONString(buf, b.Address)
	}
	buf = strconv.AppendBool(append(buf, `, "alive":`...), b.Alive)
	buf = strconv.AppendInt(append(buf, `, "conn_to":`...), seconds(b.ConnTimeout), 10)
	buf = strconv.AppendBool(append(buf, `, "enabled":`...), b.Enabled)
	buf = strconv.AppendInt(append(buf, `, "io_to":`...), seconds(b.IOTimeout), 10)
	buf = append(buf, `, "kind":"backend"`...)
	if b.HasParent {
		buf = strconv.AppendInt(append(buf, `, "parent":`...), int64(b.Parent), 10)
	}
	buf = strconv.AppendInt(append(buf, `, "priority":`...), int64(b.Priority), 10)
	buf = appendJSONString(append(buf, `, "protocol":`...), b.protocol())
	if o.requests {
		buf = strconv.AppendInt(append(buf, `, "requests":`...), b.Requests, 10)
		if b.ResponseTime >= 0 {
			buf = append(append(buf, `, "response_time":`...), responseSeconds(b)...)
		}
	}
	buf = append(buf, `, "servername":`...)
	if b.ServerName == "" {
		buf = append(buf, "null"...)
	} else {
		buf = appendJSONString(buf, b.ServerName)
	}
	if stats {
		buf = strconv.AppendInt(append(buf, `, "stats":{"request_count":`...), b.Requests, 10)
		if b.Requests > 0 {
			buf = strconv.AppendFloat(append(buf, `, "request_time_avg":`...),
				finite(float64(b.RequestTimeAvg.Nanoseconds())), 'f', 0, 64)
			buf = strconv.AppendFloat(append(buf, `, "request_time_stddev":`...),
				finite(float64(b.RequestTimeStddev.Nanoseconds())), 'f', 0, 64)
		}
		buf = append(buf, '}')
	}
	buf = appendJSONString(append(buf, `, "type":`...), string(KindRegular))
	buf = strconv.AppendInt(append(buf, `, "weight":`...), int64(group), 10)
	buf = strconv.AppendInt(append(buf, `, "ws_to":`...), seconds(b.WSTimeout), 10)
	return append(buf, '}')
}
