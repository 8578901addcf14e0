package backend

import (
	"testing"
	"time"
)

// FuzzPool drives the pool with an arbitrary sequence of operations and
// checks it against a model: Active equals the conns held, Idle never
// exceeds MaxIdle and equals the model's count, Get succeeds exactly when
// the model has an idle conn.
func FuzzPool(f *testing.F) {
	f.Add(uint8(2), []byte{0, 0, 0, 2, 2, 2, 1, 1, 1})
	f.Add(uint8(0), []byte{0, 3, 0, 2, 4, 0, 2, 1, 5, 1})
	f.Add(uint8(1), []byte{0, 0, 2, 2, 1, 3, 6, 0, 2, 7, 1})
	f.Fuzz(func(t *testing.T, maxIdle uint8, ops []byte) {
		maxIdle %= 8
		b := pipeBackend(t, Options{MaxIdle: int(maxIdle) - 1}) // -1 = no pool
		limit := int(maxIdle) - 1
		if limit == 0 {
			limit = DefaultMaxIdle
		}
		limit = max(limit, 0)
		var held []*Conn
		idle := 0
		for i, op := range ops {
			switch op % 8 {
			case 0: // dial
				c, err := b.Dial(time.Time{})
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, c)
			case 1: // get
				c, ok := b.Get()
				if ok != (idle > 0) {
					t.Fatalf("op %d: Get ok=%v with %d idle", i, ok, idle)
				}
				if ok {
					idle--
					held = append(held, c)
				}
			case 2, 3: // put / close the most recent conn
				if len(held) == 0 {
					continue
				}
				c := held[len(held)-1]
				held = held[:len(held)-1]
				if op%8 == 2 {
					b.Put(c)
					idle = min(idle+1, limit)
				} else {
					c.Close()
				}
			case 4: // done without a conn
				b.Done(nil, int(op), time.Duration(i))
			case 5:
				b.ReapIdle() // nothing is expired: a no-op
			case 6: // disable and re-enable: drains the pool
				b.SetEnabled(false)
				b.SetEnabled(true)
				idle = 0
			case 7: // put a conn twice: the second is ignored
				if len(held) > 0 {
					c := held[0]
					held = held[1:]
					b.Put(c)
					b.Put(c)
					idle = min(idle+1, limit)
				}
			}
			if b.Active() != int64(len(held)) || b.Idle() != idle || b.Idle() > limit {
				t.Fatalf("op %d (%d): active %d idle %d, model %d %d limit %d", i, op, b.Active(), b.Idle(), len(held), idle, limit)
			}
		}
		for _, c := range held {
			c.Close()
		}
		b.CloseIdle()
		if b.Active() != 0 || b.Idle() != 0 {
			t.Fatalf("leftover active %d idle %d", b.Active(), b.Idle())
		}
	})
}
