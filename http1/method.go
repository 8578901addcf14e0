package http1

// Method identifies a request method known to some xHTTP level of Pound or
// zproxy. A method outside every level is refused with 400 by the parser, as
// Pound 4 does, so the router only ever sees these.
type Method uint8

// The known methods. The order is arbitrary but stable (it is a bit index).
const (
	MethodUnknown Method = iota
	MethodGET
	MethodPOST
	MethodHEAD
	MethodPUT
	MethodPATCH
	MethodDELETE
	MethodLOCK
	MethodUNLOCK
	MethodPROPFIND
	MethodPROPPATCH
	MethodSEARCH
	MethodMKCOL
	MethodMOVE
	MethodCOPY
	MethodOPTIONS
	MethodTRACE
	MethodMKACTIVITY
	MethodCHECKOUT
	MethodMERGE
	MethodREPORT
	MethodSUBSCRIBE
	MethodUNSUBSCRIBE
	MethodNOTIFY
	MethodBPROPFIND
	MethodBPROPPATCH
	MethodPOLL
	MethodBMOVE
	MethodBCOPY
	MethodBDELETE
	MethodCONNECT
	MethodRPCINDATA
	MethodRPCOUTDATA
	MethodMKCALENDAR
	MethodVERSIONCONTROL
	// MethodPURGE is in no xHTTP set: it is a method only on a listener
	// whose Limits.Purge is set (a service takes it, lbd's CachePurge);
	// elsewhere it is unknown, as in Pound.
	MethodPURGE
	methodCount
)

var methodNames = [methodCount]string{
	"", "GET", "POST", "HEAD", "PUT", "PATCH", "DELETE",
	"LOCK", "UNLOCK", "PROPFIND", "PROPPATCH", "SEARCH", "MKCOL", "MOVE", "COPY",
	"OPTIONS", "TRACE", "MKACTIVITY", "CHECKOUT", "MERGE", "REPORT",
	"SUBSCRIBE", "UNSUBSCRIBE", "NOTIFY", "BPROPFIND", "BPROPPATCH", "POLL",
	"BMOVE", "BCOPY", "BDELETE", "CONNECT",
	"RPC_IN_DATA", "RPC_OUT_DATA", "MKCALENDAR", "VERSION-CONTROL", "PURGE",
}

// String returns the method's wire name ("" for MethodUnknown).
func (m Method) String() string {
	if m >= methodCount {
		return ""
	}
	return methodNames[m]
}

// LookupMethod maps a method token (case-sensitive, RFC 9110 §9.1) to its
// Method. The string conversion in the switch does not allocate.
func LookupMethod(b []byte) (Method, bool) {
	var m Method
	switch string(b) {
	case "GET":
		m = MethodGET
	case "POST":
		m = MethodPOST
	case "HEAD":
		m = MethodHEAD
	case "PUT":
		m = MethodPUT
	case "PATCH":
		m = MethodPATCH
	case "DELETE":
		m = MethodDELETE
	case "OPTIONS":
		m = MethodOPTIONS
	default:
		return lookupRareMethod(b)
	}
	return m, true
}

// lookupRareMethod handles the WebDAV and Microsoft extension methods, kept
// apart so the common switch stays small.
func lookupRareMethod(b []byte) (Method, bool) {
	if len(b) < 4 || len(b) > len("VERSION-CONTROL") {
		return MethodUnknown, false
	}
	for m := MethodLOCK; m < methodCount; m++ {
		if string(b) == methodNames[m] {
			return m, true
		}
	}
	return MethodUnknown, false
}

func bit(ms ...Method) uint64 {
	var s uint64
	for _, m := range ms {
		s |= 1 << m
	}
	return s
}

// xhttpSets[n] is the set of methods allowed by "xHTTP n". Levels 0-4 are
// cumulative (Pound 2.x/4.x, zproxy); level 4 adds zproxy's VERSION-CONTROL
// and level 2 its MKCALENDAR, supersets of Pound's lists so one table serves
// both. Level 5 is zproxy's REST set (GET, POST, HEAD, PUT, PATCH, DELETE,
// OPTIONS), not cumulative.
var xhttpSets = func() [6]uint64 {
	var s [6]uint64
	s[0] = bit(MethodGET, MethodPOST, MethodHEAD)
	s[1] = s[0] | bit(MethodPUT, MethodPATCH, MethodDELETE)
	s[2] = s[1] | bit(MethodLOCK, MethodUNLOCK, MethodPROPFIND, MethodPROPPATCH,
		MethodSEARCH, MethodMKCOL, MethodMOVE, MethodCOPY, MethodOPTIONS,
		MethodTRACE, MethodMKACTIVITY, MethodCHECKOUT, MethodMERGE,
		MethodREPORT, MethodMKCALENDAR)
	s[3] = s[2] | bit(MethodSUBSCRIBE, MethodUNSUBSCRIBE, MethodNOTIFY,
		MethodBPROPFIND, MethodBPROPPATCH, MethodPOLL, MethodBMOVE, MethodBCOPY,
		MethodBDELETE, MethodCONNECT)
	s[4] = s[3] | bit(MethodRPCINDATA, MethodRPCOUTDATA, MethodVERSIONCONTROL)
	s[5] = s[1] | bit(MethodOPTIONS)
	return s
}()

// MethodAllowed reports whether xHTTP level xhttp (0..5) lets m through; the
// caller answers 405 when it does not (Pound 4; 2.8 said 501). Levels out of
// range allow nothing, so a config bug fails closed.
func MethodAllowed(xhttp int, m Method) bool {
	if xhttp < 0 || xhttp >= len(xhttpSets) || m == MethodUnknown || m >= methodCount {
		return false
	}
	return xhttpSets[xhttp]&(1<<m) != 0
}
