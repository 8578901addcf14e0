package waf

import (
	"io"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	"github.com/corazawaf/coraza/v3/types"
)

// Verdict is a rule's decision about a request: the answer lbd gives
// instead of (or in the middle of) the backend's.
type Verdict struct {
	Status   int    // the status to answer with
	Location string // redirect: the Location to send
	Drop     bool   // drop: close the connection without an answer
	RuleID   int
	Msg      string // the rule's expanded msg
	Phase    int    // 1-4: request headers, request body, response headers, response body
}

// Redirect reports whether the verdict is a redirection.
func (v *Verdict) Redirect() bool { return v.Location != "" }

// Tx is the WAF's view of one request and its response. It is not safe
// for concurrent use; Close must be called once the exchange ends.
type Tx struct {
	tx types.Transaction
}

// Begin starts the transaction of a request that came from client to
// server (the listener's address).
func (e *Engine) Begin(client, server netip.AddrPort) *Tx {
	tx := e.waf.NewTransaction()
	tx.ProcessConnection(client.Addr().String(), int(client.Port()), server.Addr().String(), int(server.Port()))
	return &Tx{tx: tx}
}

// dryPrefix marks the transactions of dry runs, whose matches are not
// logged.
const dryPrefix = "lbd-dry-"

var dryCount atomic.Uint64

// BeginDry starts a transaction for a dry run (lbctl route): Discard
// ends it, and nothing it matches is logged.
func (e *Engine) BeginDry(client, server netip.AddrPort) *Tx {
	tx := e.waf.NewTransactionWithID(dryPrefix + strconv.FormatUint(dryCount.Add(1), 10))
	tx.ProcessConnection(client.Addr().String(), int(client.Port()), server.Addr().String(), int(server.Port()))
	return &Tx{tx: tx}
}

// Discard ends a dry run's transaction without its logging phase.
func (t *Tx) Discard() error { return t.tx.Close() }

// Off reports whether the rules turned the engine off for this request
// (SecRuleEngine Off, ctl:ruleEngine=Off): the rest need not be fed.
func (t *Tx) Off() bool { return t.tx.IsRuleEngineOff() }

// RequestLine gives the request line; proto is "HTTP/1.1" or the like.
func (t *Tx) RequestLine(method, uri, proto string) {
	t.tx.ProcessURI(uri, method, proto)
}

// AddRequestHeader gives one request header line.
func (t *Tx) AddRequestHeader(name, value string) { t.tx.AddRequestHeader(name, value) }

// RequestHeaders runs phase 1.
func (t *Tx) RequestHeaders() *Verdict { return t.verdict(t.tx.ProcessRequestHeaders(), 1) }

// WantsRequestBody reports whether phase 2 reads the body
// (SecRequestBodyAccess).
func (t *Tx) WantsRequestBody() bool { return t.tx.IsRequestBodyAccessible() }

// WriteRequestBody gives the next bytes of the decoded request body.
// full reports that SecRequestBodyLimit is reached: what follows is not
// inspected (SecRequestBodyLimitAction ProcessPartial) and need not be
// given; with Reject the limit is a verdict (413).
func (t *Tx) WriteRequestBody(p []byte) (v *Verdict, full bool, err error) {
	it, n, err := t.tx.WriteRequestBody(p)
	if err != nil {
		return nil, true, err
	}
	return t.verdict(it, 2), n < len(p), nil
}

// RequestBody runs phase 2 once the body (or as much as is inspected)
// was given.
func (t *Tx) RequestBody() (*Verdict, error) {
	if err := t.rawRequestBody(); err != nil {
		return nil, err
	}
	it, err := t.tx.ProcessRequestBody()
	return t.verdict(it, 2), err
}

// rawRequestBody sets REQUEST_BODY to the body as received, whatever its
// type: libmodsecurity does so for every request with a body, Coraza
// only for a urlencoded one (its processor sets the same value again),
// so rules that look for words in REQUEST_BODY (CRS 944130 and others)
// would not see an uploaded file or a JSON document.
func (t *Tx) rawRequestBody() error {
	st, ok := t.tx.(plugintypes.TransactionState)
	if !ok || !t.tx.IsRequestBodyAccessible() {
		return nil
	}
	v, ok := st.Variables().RequestBody().(interface{ Set(string) })
	if !ok {
		return nil
	}
	r, err := t.tx.RequestBodyReader()
	if err != nil {
		return err
	}
	var b strings.Builder
	if _, err := io.Copy(&b, r); err != nil {
		return err
	}
	if b.Len() > 0 {
		v.Set(b.String())
	}
	vars := st.Variables()
	if ct := vars.RequestHeaders().Get("content-type"); len(ct) > 0 && b.Len() > 0 {
		cut := vars.InboundDataError().Get() == "1"
		checkMultipart(ct[0], []byte(b.String()), cut).set(st)
	}
	return nil
}

// AddResponseHeader gives one response header line.
func (t *Tx) AddResponseHeader(name, value string) { t.tx.AddResponseHeader(name, value) }

// ResponseHeaders runs phase 3.
func (t *Tx) ResponseHeaders(status int, proto string) *Verdict {
	return t.verdict(t.tx.ProcessResponseHeaders(status, proto), 3)
}

// WantsResponseBody reports whether phase 4 reads the response body
// (SecResponseBodyAccess, and the body's type is one to inspect).
func (t *Tx) WantsResponseBody() bool {
	return t.tx.IsResponseBodyAccessible() && t.tx.IsResponseBodyProcessable()
}

// WriteResponseBody gives the next bytes of the decoded response body;
// full as for WriteRequestBody (SecResponseBodyLimit).
func (t *Tx) WriteResponseBody(p []byte) (v *Verdict, full bool, err error) {
	it, n, err := t.tx.WriteResponseBody(p)
	if err != nil {
		return nil, true, err
	}
	return t.verdict(it, 4), n < len(p), nil
}

// ResponseBody runs phase 4.
func (t *Tx) ResponseBody() (*Verdict, error) {
	it, err := t.tx.ProcessResponseBody()
	return t.verdict(it, 4), err
}

// Close runs the logging phase and releases the transaction.
func (t *Tx) Close() error {
	t.tx.ProcessLogging()
	return t.tx.Close()
}

// verdict turns Coraza's interruption into lbd's verdict.
func (t *Tx) verdict(it *types.Interruption, phase int) *Verdict {
	if it == nil {
		return nil
	}
	v := &Verdict{Status: it.Status, RuleID: it.RuleID, Phase: phase}
	switch it.Action {
	case "redirect":
		v.Location = it.Data
		if v.Status == 0 {
			v.Status = 302
		}
	case "drop":
		v.Drop = true
	}
	if v.Status == 0 {
		v.Status = 403
	}
	for _, m := range t.tx.MatchedRules() {
		if m.Rule().ID() == it.RuleID {
			v.Msg = m.Message()
			if p := int(m.Rule().Phase()); p > 0 {
				v.Phase = p
			}
			break
		}
	}
	return v
}

// String describes the verdict for logs: rule, phase, answer, message.
func (v *Verdict) String() string {
	s := "rule " + strconv.Itoa(v.RuleID) + " (phase " + strconv.Itoa(v.Phase) + ")"
	switch {
	case v.Drop:
		s += " drop"
	case v.Redirect():
		s += " redirect " + strconv.Itoa(v.Status) + " " + v.Location
	default:
		s += " deny " + strconv.Itoa(v.Status)
	}
	if v.Msg != "" {
		s += ": " + strconv.Quote(v.Msg)
	}
	return s
}
