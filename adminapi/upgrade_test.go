package adminapi

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

var _ Upgrader = (*upgradingCtl)(nil)

// upgradingCtl is the fake controller with an Upgrader.
type upgradingCtl struct {
	*fakeCtl
	err      error
	handOver chan struct{}
}

func (u *upgradingCtl) Upgrade() (UpgradeResult, error) {
	if u.err != nil {
		return UpgradeResult{}, u.err
	}
	return UpgradeResult{PID: 20, Previous: 10}, nil
}

func (u *upgradingCtl) HandOver() { u.handOver <- struct{}{} }

func newUpgrading(err error) *upgradingCtl {
	return &upgradingCtl{fakeCtl: newFake(), err: err, handOver: make(chan struct{}, 2)}
}

// TestUpgradeEndpoint: PATCH /upgrade in both dialects answers the new
// pid and hands over only after a successful upgrade; a Controller that
// cannot upgrade answers 501, a failed upgrade its reason.
func TestUpgradeEndpoint(t *testing.T) {
	cases := []struct {
		name     string
		ctl      func() Controller
		status   int
		body     string
		handOver int
	}{
		{"upgraded", func() Controller { return newUpgrading(nil) },
			200, `{"result":"ok","pid":20,"previous":10}`, 1},
		{"failed", func() Controller { return newUpgrading(errors.New("boom")) },
			500, `{"result":"error","reason":"upgrade failed: boom"}`, 0},
		{"busy", func() Controller { return newUpgrading(errors.Join(ErrConflict)) },
			409, `{"result":"error","reason":"upgrade failed: conflict"}`, 0},
		{"unsupported", func() Controller { return newFake() },
			501, `{"result":"error","reason":"this control socket cannot upgrade the binary"}`, 0},
	}
	for _, c := range cases {
		for _, dialect := range []string{"pound", "zproxy"} {
			t.Run(c.name+"/"+dialect, func(t *testing.T) {
				ctl := c.ctl()
				h := NewPoundHandler(ctl)
				if dialect == "zproxy" {
					h = NewZproxyHandler(ctl)
				}
				srv := httptest.NewServer(h)
				defer srv.Close()
				req, _ := http.NewRequest("PATCH", srv.URL+"/upgrade", nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != c.status || strings.TrimSpace(string(b)) != c.body {
					t.Errorf("got %d %s, want %d %s", resp.StatusCode, b, c.status, c.body)
				}
				u, ok := ctl.(*upgradingCtl)
				if !ok {
					return
				}
				if c.handOver == 0 {
					// upgradeReply gave no hand-over to call.
					if len(u.handOver) != 0 {
						t.Error("HandOver called after a failed upgrade")
					}
					return
				}
				// HandOver follows the reply, so it may come after it.
				select {
				case <-u.handOver:
				case <-time.After(5 * time.Second):
					t.Error("HandOver not called after a successful upgrade")
				}
			})
		}
	}
}
