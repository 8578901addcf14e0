package functionaltests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The live dashboard in a real browser: Debian's headless Chromium,
// driven over the DevTools protocol by chromedp (a Go module, so the test
// needs nothing but the chromium package: no Node, no npm at CI time).

// dashConfig has a Control socket, a Dashboard service limited to the
// loopback clients, and a service of three backends.
const dashConfig = `Daemon 0
LogLevel 0
Alive 1
TimeOut 3
Control "{DIR}/ctl.sock"
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service "dash"
		URL "^/lbd-dashboard(/|$)"
		ACL
			"127.0.0.0/8"
		End
		Dashboard
	End
	Service "moved"
		URL "^/old(/|$)"
		Redirect "http://127.0.0.1/new"
	End
	Service "web"
%s	End
End
`

// chromium starts a headless Chromium with a fresh profile and returns a
// browser context; it is killed when the test ends.
func chromium(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("LBD_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err != nil {
		t.Fatalf("Chromium not found (%v): install Debian's chromium package (.ci/run does) or set LBD_CHROMIUM", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	tctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return tctx
}

// pageState is the state column of every backend row, as "id=state".
const pageState = `[...document.querySelectorAll("tr.backend")].map(r => r.dataset.id + "=" + r.querySelector("td.state").textContent).join(" ")`

// waitPage polls the page until the JavaScript predicate holds.
func waitPage(t *testing.T, ctx context.Context, what, predicate string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](predicate, chromedp.WithPollingInterval(100*time.Millisecond),
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](pageState))
		t.Fatalf("%s: %v; the page shows: %s", what, err, state)
	}
}

// rowState is the predicate "backend id shows state".
func rowState(id, state string) string {
	return fmt.Sprintf(`(() => { const c = document.querySelector('tr.backend[data-id=%q] td.state'); return !!c && c.textContent === %q; })()`, id, state)
}

// apiBackend reads backend i of the web service from lbd's Pound API.
func apiBackend(t *testing.T, sock string, i int) map[string]any {
	t.Helper()
	var b map[string]any
	if err := json.Unmarshal([]byte(ctlGet(t, sock, fmt.Sprintf("/listener/1/2/%d", i))), &b); err != nil {
		t.Fatal(err)
	}
	return b
}

// startDashboardLbctl runs lbctl dashboard and returns the URL it prints.
func startDashboardLbctl(t *testing.T, sock string) string {
	t.Helper()
	cmd := exec.Command(binary(t, "lbctl"), "-s", sock, "dashboard", "-l", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("lbctl dashboard printed nothing: %v", err)
	}
	m := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?key=[0-9a-f]+`).FindString(line)
	if m == "" {
		t.Fatalf("lbctl dashboard printed %q, no URL", line)
	}
	return m
}

// artifactsDir is where screenshots go: $LBD_ARTIFACTS (make test sets
// it) or the test's temporary directory.
func artifactsDir(t *testing.T) string {
	if d := os.Getenv("LBD_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

func TestDashboardInChromium(t *testing.T) {
	a := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	b := startBackend(t, "127.0.0.3", "b", echoHandler("b"))
	c := startBackend(t, "127.0.0.4", "c", echoHandler("c"))
	p := startLBD(t, fmt.Sprintf(dashConfig, a.block()+b.block()+c.block()))
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	id := func(be *backend) string { return strings.Replace(be.addr, ":", "-", 1) }
	ctx := chromium(t)

	// Through lbctl dashboard: the URL with its key, then the page.
	if err := chromedp.Do(ctx, chromedp.Navigate(startDashboardLbctl(t, sock))); err != nil {
		t.Fatal(err)
	}
	for _, be := range []*backend{a, b, c} {
		waitPage(t, ctx, "backend "+be.name+" listed alive", rowState(id(be), "alive"))
	}
	// Traffic shows as requests per second.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		client := &http.Client{Timeout: 2 * time.Second}
		for i := 0; i < 2000; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if resp, err := client.Get("http://" + p.addr + "/"); err == nil {
				resp.Body.Close()
			}
		}
	}()
	waitPage(t, ctx, "a request rate shows", `[...document.querySelectorAll("tr.service[data-service='0/2'] td")].some((td, i) => i === 2 && parseFloat(td.textContent) > 0)`)
	graphsMove(t, ctx)
	redirectsCounted(t, ctx, p)
	keyboard(t, ctx, id(c))

	// Kill a: lbd finds it dead on its next connect, the page follows,
	// and the timeline says why.
	a.stop()
	waitPage(t, ctx, "backend a shown dead", rowState(id(a), "dead"))
	waitPage(t, ctx, "a's down event in the timeline, with its reason", fmt.Sprintf(
		`[...document.querySelectorAll("#events li[data-kind=down]")].some(li => li.querySelector(".object").textContent.includes(%q) && li.querySelector(".detail").textContent.length > 0)`, a.addr))
	screenshots(t, ctx, "dashboard-events")
	if apiBackend(t, sock, 0)["alive"] != false {
		t.Fatalf("the page shows a dead, the API does not")
	}

	// Click Disable on b: lbd's API reports it disabled, the page too.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr.backend[data-id=%q] button[data-action="disable"]`, id(b))))); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "backend b shown disabled", rowState(id(b), "disabled"))
	if got := apiBackend(t, sock, 1)["enabled"]; got != false {
		t.Fatalf("after the click the API says b enabled=%v", got)
	}
	waitPage(t, ctx, "b's disable in the timeline, with who asked", fmt.Sprintf(
		`[...document.querySelectorAll("#events li[data-kind=disable]")].some(li => li.querySelector(".object").textContent.includes(%q) && li.querySelector(".who").textContent.includes("uid "))`, b.addr))
	close(stop)
	wg.Wait()
	saveShot(t, ctx, "dashboard.png", 1280, 900)

	// The same page through the Dashboard backend of a service: Enable
	// works there too.
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+p.addr+"/lbd-dashboard")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "b listed disabled through the service", rowState(id(b), "disabled"))
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr.backend[data-id=%q] button[data-action="enable"]`, id(b))))); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "b enabled again through the service", rowState(id(b), "alive"))
	if got := apiBackend(t, sock, 1)["enabled"]; got != true {
		t.Fatalf("after the click the API says b enabled=%v", got)
	}

	t.Run("a cross-site page cannot act", func(t *testing.T) {
		crossSiteAttack(t, ctx, p, sock, id(c))
	})
}

// evilPage tries everything a page of another site can do against the
// dashboard at target (its URL ending in "/"): read the token, POST with
// a guessed token (a preflighted request), POST without one (no-cors),
// then a form POST. window.results says what the browser let through.
const evilPage = `<!DOCTYPE html><title>evil</title>
<form id="f" method="POST" action="%[1]sapi/enable" enctype="text/plain"><input name='{"listener":0,"service":2,"backend":2,"enabled":false,"pad":"' value='"}'></form>
<script>
window.results = {};
const body = JSON.stringify({listener: 0, service: 2, backend: 2, enabled: false});
Promise.allSettled([
  fetch("%[1]sapi/token").then(r => r.text()).then(t => { results.token = "read " + t; }, () => { results.token = "blocked"; }),
  fetch("%[1]sapi/enable", {method: "POST", headers: {"Content-Type": "application/json", "X-LBD-Token": "guess"}, body})
    .then(r => { results.preflighted = "sent " + r.status; }, () => { results.preflighted = "blocked"; }),
  fetch("%[1]sapi/enable", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body})
    .then(r => { results.nocors = r.type; }, () => { results.nocors = "blocked"; }),
]).then(() => { results.done = true; });
</script>`

// crossSiteAttack loads evilPage from another origin against the
// Dashboard service, and checks that backend id stays enabled.
func crossSiteAttack(t *testing.T, ctx context.Context, p *proc, sock, id string) {
	target := "http://" + p.addr + "/lbd-dashboard/"
	evil := startBackend(t, "127.0.0.5", "evil", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, evilPage, target)
	}))
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+evil.addr+"/")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the evil page's requests settled", "window.results && window.results.done === true")
	res, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any]("window.results"))
	if err != nil {
		t.Fatal(err)
	}
	if res["token"] != "blocked" || res["preflighted"] != "blocked" || res["nocors"] != "opaque" {
		t.Errorf("what the browser let through: %v (want the token and the preflighted POST blocked)", res)
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("f").submit()`)); err != nil {
		t.Fatal(err)
	}
	// The navigation ends any poll running in the page: ask from here.
	var text string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		loc, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.readyState === "complete" ? location.pathname : ""`))
		if err == nil && strings.HasSuffix(loc, "/api/enable") {
			if text, err = chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText")); err == nil {
				break
			}
		}
	}
	if !strings.Contains(text, "cross-site request refused") {
		t.Errorf("the form post was answered %q, want the refusal", text)
	}
	if got := apiBackend(t, sock, 2)["enabled"]; got != true {
		t.Fatalf("a cross-site page changed backend %s: enabled=%v", id, got)
	}
}

// chartPoints is the polyline of the whole "web" service's requests/s
// chart (empty: none drawn yet).
const chartPoints = `(() => { const p = document.querySelector('section[data-graphs="0/2"] figure[data-chart=rps] polyline'); return p ? p.getAttribute("points") : ""; })()`

// graphsMove checks, under load, that the graphs have points and that
// they change between two screenshots taken 3 s apart.
func graphsMove(t *testing.T, ctx context.Context) {
	t.Helper()
	waitPage(t, ctx, "the requests/s graph has points", `(() => { const f = document.querySelector('section[data-graphs="0/2"] figure[data-chart=rps]'); return !!f && +f.dataset.points >= 2; })()`)
	before, err := chromedp.Run(ctx, chromedp.Evaluate[string](chartPoints))
	if err != nil {
		t.Fatal(err)
	}
	shot1 := saveShot(t, ctx, "dashboard-graphs-1.png", 1400, 900)
	time.Sleep(3 * time.Second)
	after, err := chromedp.Run(ctx, chromedp.Evaluate[string](chartPoints))
	if err != nil {
		t.Fatal(err)
	}
	shot2 := saveShot(t, ctx, "dashboard-graphs-2.png", 1400, 900)
	if before == after {
		t.Errorf("the requests/s graph did not move in 3 s: %q", after)
	}
	if string(shot1) == string(shot2) {
		t.Errorf("the two screenshots 3 s apart are the same")
	}
}

// screenshots saves the page at a desktop's and a phone's size.
func screenshots(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	saveShot(t, ctx, name+"-1400x900.png", 1400, 900)
	saveShot(t, ctx, name+"-390x844.png", 390, 844)
	// Back to the desktop size for what follows.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1400, 900)); err != nil {
		t.Fatal(err)
	}
}

// saveShot sets the viewport, lets the page lay out, and saves the
// viewport's screenshot as an artifact.
func saveShot(t *testing.T, ctx context.Context, name string, w, h int64) []byte {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, h), chromedp.Sleep(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(artifactsDir(t), name)
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(shot))
	return shot
}

// redirectsCounted checks that the requests a Redirect service answers
// show as its backend's requests.
func redirectsCounted(t *testing.T, ctx context.Context, p *proc) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i := 0; i < 5; i++ {
		resp, err := client.Get("http://" + p.addr + "/old")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 3 {
			t.Fatalf("GET /old: %d, want a redirect", resp.StatusCode)
		}
	}
	waitPage(t, ctx, "the redirect backend shows its 5 requests",
		`(() => { const c = document.querySelector("tr.backend[data-backend='0/1/0'] td.requests"); return !!c && +c.textContent >= 5; })()`)
}

// keyboard checks what a keyboard user relies on: the focus stays on a
// button across the table's rebuilds, and a service's graphs switch to
// one of its backends from the select (arrow keys on a focused select).
func keyboard(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	button := fmt.Sprintf(`tr.backend[data-id=%q] button`, id)
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(button)), chromedp.Sleep(1500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.activeElement === document.querySelector(%q)`, button))); err != nil || !ok {
		t.Errorf("the focus did not survive the table's refresh (%v)", err)
	}
	sel := `section[data-graphs="0/2"] select`
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(sel)), chromedp.KeyEvent(kb.ArrowDown)); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the graphs switched to a backend with the keyboard",
		`(() => { const s = document.querySelector('section[data-graphs="0/2"] select'); return s.value.split("/").length === 3 && +document.querySelector('section[data-graphs="0/2"] figure[data-chart=rps]').dataset.points > 0; })()`)
}
