package h2backend

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// gRPC status codes lbd sends or reads (grpc/codes).
const (
	CodeOK               = 0
	CodeCancelled        = 1
	CodeUnknown          = 2
	CodeDeadlineExceeded = 4
	CodeNotFound         = 5
	CodePermissionDenied = 7
	CodeResourceExhaust  = 8
	CodeUnimplemented    = 12
	CodeInternal         = 13
	CodeUnavailable      = 14
	CodeUnauthenticated  = 16
)

// IsGRPC reports whether a Content-Type is gRPC's ("application/grpc",
// "application/grpc+proto", "application/grpc-web"...).
func IsGRPC(contentType []byte) bool {
	const p = "application/grpc"
	if len(contentType) < len(p) || !strings.EqualFold(string(contentType[:len(p)]), p) {
		return false
	}
	rest := contentType[len(p):]
	return len(rest) == 0 || rest[0] == '+' || rest[0] == ';' || rest[0] == '-'
}

// StatusForHTTP maps the HTTP status of an error lbd generates to the
// gRPC code a gRPC client is sent instead, following gRPC's own
// HTTP-to-gRPC table (doc/http-grpc-status-mapping.md) where it has an
// entry, and naming the cause more exactly where lbd knows it.
func StatusForHTTP(status int) int {
	switch status {
	case 400:
		return CodeInternal
	case 401:
		return CodeUnauthenticated
	case 403:
		return CodePermissionDenied
	case 404:
		return CodeUnimplemented
	case 408, 504:
		return CodeDeadlineExceeded
	case 413, 414, 431:
		return CodeResourceExhaust
	case 429, 502, 503:
		return CodeUnavailable
	}
	return CodeUnknown
}

// maxTimeout: grpc-timeout has at most 8 digits.
const maxTimeoutDigits = 8

// ParseTimeout reads a grpc-timeout value ("100m", "5S"): at most eight
// digits and a unit among H, M, S, m (ms), u (µs), n (ns).
func ParseTimeout(v []byte) (time.Duration, bool) {
	if len(v) < 2 || len(v) > maxTimeoutDigits+1 {
		return 0, false
	}
	var n int64
	for _, c := range v[:len(v)-1] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	var unit time.Duration
	switch v[len(v)-1] {
	case 'H':
		unit = time.Hour
	case 'M':
		unit = time.Minute
	case 'S':
		unit = time.Second
	case 'm':
		unit = time.Millisecond
	case 'u':
		unit = time.Microsecond
	case 'n':
		unit = time.Nanosecond
	default:
		return 0, false
	}
	if n > int64(1<<62)/int64(unit) {
		return 1 << 62, true
	}
	return time.Duration(n) * unit, true
}

// The health check: grpc.health.v1.Health/Check, whose messages are
// tiny enough to write by hand (protobuf: HealthCheckRequest{string
// service = 1}, HealthCheckResponse{ServingStatus status = 1}).
const (
	healthPath = "/grpc.health.v1.Health/Check"
	serving    = 1 // HealthCheckResponse.SERVING
	// maxHealthReply bounds the answer read; a real one is a few bytes.
	maxHealthReply = 1 << 10
)

// servingStatusName names HealthCheckResponse.ServingStatus values.
var servingStatusName = map[uint64]string{0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}

// HealthCheck asks the backend's gRPC health service about service (""
// = the server as a whole) and returns nil only for SERVING.
func (p *Pool) HealthCheck(ctx context.Context, authority, service string) error {
	msg := appendHealthRequest(nil, service)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Scheme()+"://"+authority+healthPath, bytes.NewReader(msg))
	if err != nil {
		return err
	}
	req.URL = &url.URL{Scheme: p.Scheme(), Host: authority, Path: healthPath}
	req.Header = http.Header{"Content-Type": {"application/grpc"}, "Te": {"trailers"}}
	req.ContentLength = int64(len(msg))
	resp, err := p.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health check: HTTP status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHealthReply))
	if err != nil {
		return err
	}
	if code := trailerStatus(resp); code != "0" {
		return fmt.Errorf("health check: grpc-status %s %s", code, grpcMessage(resp))
	}
	st, err := parseHealthResponse(body)
	if err != nil {
		return err
	}
	if st != serving {
		name, ok := servingStatusName[st]
		if !ok {
			name = strconv.FormatUint(st, 10)
		}
		return fmt.Errorf("health check: %s", name)
	}
	return nil
}

// trailerStatus is grpc-status from the trailers, or from the headers
// of a trailers-only response.
func trailerStatus(resp *http.Response) string {
	if v := resp.Trailer.Get("Grpc-Status"); v != "" {
		return v
	}
	if v := resp.Header.Get("Grpc-Status"); v != "" {
		return v
	}
	return "(none)"
}

func grpcMessage(resp *http.Response) string {
	if v := resp.Trailer.Get("Grpc-Message"); v != "" {
		return v
	}
	return resp.Header.Get("Grpc-Message")
}

// appendHealthRequest writes one gRPC message frame (uncompressed)
// holding HealthCheckRequest{service}.
func appendHealthRequest(b []byte, service string) []byte {
	var pb []byte
	if service != "" {
		pb = append(pb, 0x0a) // field 1, length-delimited
		pb = binary.AppendUvarint(pb, uint64(len(service)))
		pb = append(pb, service...)
	}
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(pb)))
	return append(b, pb...)
}

var errHealthReply = errors.New("health check: malformed HealthCheckResponse")

// parseHealthResponse reads the status out of one gRPC message frame
// holding HealthCheckResponse; unknown fields are skipped.
func parseHealthResponse(b []byte) (uint64, error) {
	if len(b) < 5 || b[0] != 0 {
		return 0, errHealthReply // compressed or short
	}
	n := binary.BigEndian.Uint32(b[1:5])
	if uint64(n) != uint64(len(b)-5) {
		return 0, errHealthReply
	}
	pb := b[5:]
	var status uint64
	for len(pb) > 0 {
		key, k := binary.Uvarint(pb)
		if k <= 0 {
			return 0, errHealthReply
		}
		pb = pb[k:]
		switch key & 7 {
		case 0: // varint
			v, k := binary.Uvarint(pb)
			if k <= 0 {
				return 0, errHealthReply
			}
			pb = pb[k:]
			if key>>3 == 1 {
				status = v
			}
		case 2: // length-delimited
			l, k := binary.Uvarint(pb)
			if k <= 0 || l > uint64(len(pb)-k) {
				return 0, errHealthReply
			}
			pb = pb[k+int(l):]
		case 1:
			if len(pb) < 8 {
				return 0, errHealthReply
			}
			pb = pb[8:]
		case 5:
			if len(pb) < 4 {
				return 0, errHealthReply
			}
			pb = pb[4:]
		default:
			return 0, errHealthReply
		}
	}
	return status, nil
}
