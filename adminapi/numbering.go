package adminapi

// How listeners are numbered. Each API keeps its clients' numbering:
// the Pound socket Pound 4's, where the control socket, when the
// configuration has one, is listener 0 and the configuration's listeners
// follow from 1; the zproxy socket zproxy's, the configuration's
// listeners from 0. lbd's own tools follow the socket they are reached
// through (POST /route, the dashboard, lbctl, which prints and accepts
// what that socket's listing says), and Pound's numbering where there is
// no socket (a Dashboard backend; the metrics, which are Pound's).

// numbering is one of the two.
type numbering struct {
	// pound counts the control socket as listener 0.
	pound bool
}

var (
	poundNumbering  = numbering{pound: true}
	zproxyNumbering = numbering{}
)

// offset is the number of the configuration's first listener.
func (n numbering) offset(st *State) int {
	if n.pound && st.ControlSocket != "" {
		return 1
	}
	return 0
}

// number is the number of the listener at State index i.
func (n numbering) number(st *State, i int) int { return i + n.offset(st) }

// index is the State index of listener number num: ok is false when no
// listener of the configuration has that number (the control socket
// has none there).
func (n numbering) index(st *State, num int) (int, bool) {
	i := num - n.offset(st)
	return i, i >= 0 && i < len(st.Listeners)
}
