package functionaltests

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardPagedAtSize opens the dashboard of 1,000 services in
// Chromium: the page holds one page of 100 services (rows and graphs),
// says where it is, pages forward, and the filter finds one service by
// name and one by its backend's address.
func TestDashboardPagedAtSize(t *testing.T) {
	be := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	other := startBackend(t, "127.0.0.3", "b", echoHandler("b"))
	var svcs strings.Builder
	for i := 0; i < 1000; i++ {
		b := be
		if i == 421 {
			b = other
		}
		fmt.Fprintf(&svcs, "\tService \"s%d\"\n\t\tURL \"^/app%d/\"\n%s\tEnd\n", i, i, b.block())
	}
	cfg := "Daemon 0\nLogLevel 0\nControl \"{DIR}/ctl.sock\"\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n" + svcs.String() + "End\n"
	p := startLBD(t, cfg)
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	ctx := chromium(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(startDashboardLbctl(t, sock))); err != nil {
		t.Fatal(err)
	}
	const rows = `document.querySelectorAll("tr.service").length + " services, " + document.querySelectorAll("tr.backend").length + " backends, " + document.querySelectorAll("section.graphs").length + " graph cards"`
	const shown = `document.getElementById("range").textContent + " | " + [...document.querySelectorAll("tr.service td.name")].map(td => td.firstChild.textContent).join(" ")`
	waitText := func(what, expr, want string) {
		t.Helper()
		var got string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr)); err == nil {
				if got = v; strings.HasPrefix(got, want) {
					return
				}
			}
		}
		t.Fatalf("%s: the page shows %q, want it to start with %q", what, got, want)
	}
	waitText("the first page", shown, "services 1–100 of 1000 | “s0” “s1” “s2”")
	waitText("only the page's rows and graphs", rows, "100 services, 100 backends, 100 graph cards")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#next"))); err != nil {
		t.Fatal(err)
	}
	waitText("the second page", shown, "services 101–200 of 1000 | “s100” “s101”")
	waitText("the second page's rows and graphs", rows, "100 services, 100 backends, 100 graph cards")
	if err := chromedp.Do(ctx, chromedp.SendKeys("#filter", "S737")); err != nil {
		t.Fatal(err)
	}
	waitText("filtered by name, from the first match", shown, "services 1–1 of 1 | “s737”")
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("filter").value = ""`),
		chromedp.SendKeys("#filter", other.addr)); err != nil {
		t.Fatal(err)
	}
	waitText("filtered by backend address", shown, "services 1–1 of 1 | “s421”")
	saveShot(t, ctx, "dashboard-paged.png", 1280, 900)
}
