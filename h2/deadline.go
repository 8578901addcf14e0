package h2

import (
	"os"
	"sync"
	"time"
)

// Wake-ups and deadlines of the vconns' waits (vconn.go).

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// wait blocks until ch is signalled or the deadline passed.
func wait(ch <-chan struct{}, dl *deadline) error {
	t := dl.timer()
	if t == nil {
		<-ch
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-t:
		return os.ErrDeadlineExceeded
	}
}

// deadline is a settable point in time with a reusable timer.
type deadline struct {
	mu sync.Mutex
	at time.Time
	t  *time.Timer
}

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	d.at = t
	d.mu.Unlock()
}

// timer returns a channel firing at the deadline, or nil when there is
// none. Only the one goroutine reading (or writing) waits on it.
func (d *deadline) timer() <-chan time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at.IsZero() {
		return nil
	}
	if d.t == nil {
		d.t = time.NewTimer(time.Until(d.at))
	} else {
		d.t.Reset(time.Until(d.at)) // Go 1.23+: no stale value to drain
	}
	return d.t.C
}

func (d *deadline) passed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.at.IsZero() && !time.Now().Before(d.at)
}
