package waf

import (
	"net/netip"
	"strings"
	"testing"
)

// formBody is a 4 KiB urlencoded review form: prose in one long field.
func formBody() string {
	head := "first_name=Maria&last_name=Okafor&stay=2024-05-03&rating=4&title=Lovely+quiet+place&review="
	tail := "&consent=on"
	review := strings.Repeat("We+stayed+three+nights+at+the+cottage+by+the+lake+and+the+kids+loved+the+canoe.+The+kitchen+was+well+stocked+and+the+beds+were+comfortable.+The+host+left+fresh+bread+every+morning.+", 30)
	return head + review[:4096-len(head)-len(tail)] + tail
}

var browserHeaders = [][2]string{
	{"Host", "shop.example"},
	{"User-Agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"},
	{"Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"},
	{"Accept-Language", "en-US,en;q=0.9"},
	{"Accept-Encoding", "gzip, deflate, br, zstd"},
	{"Referer", "https://shop.example/category/shoes?page=2"},
	{"Cookie", "_ga=GA1.2.1427683012.1715001234; sid=7f3a9c2e1b4d5a60; cart=A-100%3A2; theme=dark"},
}

func benchCRS(b *testing.B, method, uri, body string) {
	e, err := Compile([]string{CRS}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	hdr := browserHeaders
	if body != "" {
		hdr = append(append([][2]string{}, hdr...), [2]string{"Content-Type", "application/x-www-form-urlencoded"})
	}
	client, server := netip.MustParseAddrPort("192.0.2.7:40000"), netip.MustParseAddrPort("127.0.0.1:80")
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		tx := e.Begin(client, server)
		tx.RequestLine(method, uri, "HTTP/1.1")
		for _, h := range hdr {
			tx.AddRequestHeader(h[0], h[1])
		}
		if v := tx.RequestHeaders(); v != nil {
			b.Fatal(v)
		}
		if body != "" {
			if v, _, err := tx.WriteRequestBody([]byte(body)); err != nil || v != nil {
				b.Fatal(v, err)
			}
		}
		if v, err := tx.RequestBody(); err != nil || v != nil {
			b.Fatal(v, err)
		}
		if err := tx.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCRSBrowserGET is the built-in CRS on a browser navigation.
func BenchmarkCRSBrowserGET(b *testing.B) {
	benchCRS(b, "GET", "/products/1042?color=navy&size=M", "")
}

// BenchmarkCRSFormPOST is the built-in CRS on a 4 KiB form.
func BenchmarkCRSFormPOST(b *testing.B) {
	benchCRS(b, "POST", "/reviews/new", formBody())
}
