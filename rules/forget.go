package rules

import "net/netip"

// Forget drops what the state points to in the buffers of the request it
// last served (header lines, submatch subjects, held values, the
// exchange) and what that request left (client, identity, script
// session), keeping its own reusable storage: an idle connection then
// keeps none of those buffers alive while it waits, and the state can
// serve another connection (package proxy parks idle connections and
// pools their buffers and state). Begin starts afresh either way.
func (st *State) Forget() {
	st.EndScripts()
	st.Client, st.LogSuppress, st.RetryAfter, st.Dry = netip.Addr{}, 0, 0, false
	st.jwt = st.jwt[:0]
	st.arena = st.arena[:0]
	st.Req.forget()
	st.Resp.forget()
	st.smq = [smqSize]submatch{}
	st.smCur, st.smLen = 0, 0
	clear(st.held[:]) // a held value may alias the request's buffers
	st.X = Exchange{}
	clear(st.scriptArgs[:cap(st.scriptArgs)])
	st.scriptArgs = st.scriptArgs[:0]
	st.Identity = nil
	st.authMemo = [maxAuthMemo]authMemo{}
	st.authN = 0
}

func (m *Message) forget() {
	clear(m.Lines[:cap(m.Lines)])
	m.Reset()
}
