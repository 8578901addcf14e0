//go:build linux

package main

import (
	"bufio"
	"fmt"
	"net"
	"sync"
	"time"
)

// sample is one paced request: when it was sent and how long its
// answer took.
type sample struct {
	at   time.Time
	took time.Duration
}

// prober sends paced requests, each on one of 1,000 live sessions, over
// four keep-alive connections, one request at a time on each.
type prober struct {
	addr    string
	perConn time.Duration
	wg      sync.WaitGroup
	mu      sync.Mutex
	samples []sample
}

const proberConns, liveKeys = 4, 1000

func newProber(addr string, rate int) *prober {
	return &prober{addr: addr, perConn: time.Duration(proberConns) * time.Second / time.Duration(rate)}
}

func (p *prober) run(until time.Time) {
	for c := range proberConns {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			got, err := p.conn(c, until)
			if err != nil {
				die("prober: " + err.Error())
			}
			p.mu.Lock()
			p.samples = append(p.samples, got...)
			p.mu.Unlock()
		}()
	}
}

func (p *prober) wait() []sample {
	p.wg.Wait()
	return p.samples
}

// conn paces requests on one connection until the time given. Keys
// start far above the fill's, so every probe finds a live session of
// its own (the first round creates them).
func (p *prober) conn(c int, until time.Time) ([]sample, error) {
	nc, err := net.Dial("tcp", p.addr)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	// Bounded: each probe must be answered before the run's end + 10 s.
	if err := nc.SetDeadline(until.Add(10 * time.Second)); err != nil {
		return nil, err
	}
	br := bufio.NewReader(nc)
	tick := time.NewTicker(p.perConn)
	defer tick.Stop()
	var out []sample
	var req []byte
	for i := c; time.Now().Before(until); i += proberConns {
		<-tick.C
		req = fmt.Appendf(req[:0], "GET / HTTP/1.1\r\nHost: probe\r\nX-Sess: %032x\r\n\r\n", 1<<40+i%liveKeys)
		t0 := time.Now()
		if _, err := nc.Write(req); err != nil {
			return nil, err
		}
		if err := readResponse(br); err != nil {
			return nil, err
		}
		out = append(out, sample{at: t0, took: time.Since(t0)})
	}
	return out, nil
}
