package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

const host = "shop.example"

// Browsers: the header sets real ones send on a navigation, in their
// order. Attacks are dressed in them too, so that a verdict turns on the
// payload and not on a bare request.
var browsers = [][][2]string{
	{
		{"Host", host},
		{"sec-ch-ua", `"Chromium";v="124", "Google Chrome";v="124", "Not-A.Brand";v="99"`},
		{"sec-ch-ua-mobile", "?0"},
		{"sec-ch-ua-platform", `"Windows"`},
		{"Upgrade-Insecure-Requests", "1"},
		{"User-Agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"},
		{"Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"},
		{"Sec-Fetch-Site", "same-origin"},
		{"Sec-Fetch-Mode", "navigate"},
		{"Sec-Fetch-User", "?1"},
		{"Sec-Fetch-Dest", "document"},
		{"Referer", "https://shop.example/"},
		{"Accept-Encoding", "gzip, deflate, br, zstd"},
		{"Accept-Language", "en-US,en;q=0.9"},
	},
	{
		{"Host", host},
		{"User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0"},
		{"Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
		{"Accept-Language", "de-DE,de;q=0.8,en-US;q=0.5,en;q=0.3"},
		{"Accept-Encoding", "gzip, deflate, br"},
		{"DNT", "1"},
		{"Upgrade-Insecure-Requests", "1"},
		{"Sec-Fetch-Dest", "document"},
		{"Sec-Fetch-Mode", "navigate"},
		{"Sec-Fetch-Site", "none"},
		{"Sec-Fetch-User", "?1"},
	},
	{
		{"Host", host},
		{"Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
		{"Sec-Fetch-Site", "none"},
		{"Accept-Encoding", "gzip, deflate, br"},
		{"Sec-Fetch-Mode", "navigate"},
		{"User-Agent", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"},
		{"Accept-Language", "fr-FR,fr;q=0.9"},
		{"Sec-Fetch-Dest", "document"},
	},
}

var nBrowser int

// browser returns a copy of the next browser's headers (round robin).
func browser() [][2]string {
	b := browsers[nBrowser%len(browsers)]
	nBrowser++
	return append([][2]string(nil), b...)
}

// with returns h with name set to value: replaced where present (same
// position), appended otherwise.
func with(h [][2]string, name, value string) [][2]string {
	for i := range h {
		if strings.EqualFold(h[i][0], name) {
			h[i][1] = value
			return h
		}
	}
	return append(h, [2]string{name, value})
}

// without returns h less every header called name.
func without(h [][2]string, name string) [][2]string {
	out := h[:0:0]
	for _, kv := range h {
		if !strings.EqualFold(kv[0], name) {
			out = append(out, kv)
		}
	}
	return out
}

// looseEscape percent-encodes only what cannot stand in a request line
// (controls, space, '#', '%', '&', '+', bytes past ASCII): quotes and angle
// brackets stay raw, as a hand-written attack or an old client sends them.
func looseEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '#' || c == '%' || c == '&' || c == '+' {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// cookieSafe keeps a payload inside one cookie value: ';' would end it
// and CR/LF would end the header.
func cookieSafe(s string) string {
	return strings.NewReplacer(";", "%3B", "\r", "%0D", "\n", "%0A").Replace(s)
}

// headerSafe keeps a payload inside one header line.
func headerSafe(s string) string {
	return strings.NewReplacer("\r", "%0D", "\n", "%0A").Replace(s)
}

// jsonText marshals v the way browsers' JSON.stringify does: no HTML
// escaping of <, > and &.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only maps, slices and strings: cannot fail
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

var nBoundary int

// multipart renders parts (name, filename, content type, data) with a
// WebKit-style boundary; it returns the Content-Type and the body.
func multipart(parts ...[4]string) (string, string) {
	nBoundary++
	bnd := fmt.Sprintf("----WebKitFormBoundary%016x", uint64(nBoundary)*0x9e3779b97f4a7c15)[:38]
	var b strings.Builder
	for _, p := range parts {
		b.WriteString("--" + bnd + "\r\n")
		if p[1] != "" {
			fmt.Fprintf(&b, "Content-Disposition: form-data; name=%q; filename=%q\r\n", p[0], p[1])
			ct := p[2]
			if ct == "" {
				ct = "application/octet-stream"
			}
			b.WriteString("Content-Type: " + ct + "\r\n")
		} else {
			fmt.Fprintf(&b, "Content-Disposition: form-data; name=%q\r\n", p[0])
		}
		b.WriteString("\r\n" + p[3] + "\r\n")
	}
	b.WriteString("--" + bnd + "--\r\n")
	return "multipart/form-data; boundary=" + bnd, b.String()
}

// prose is filler for big forms: ordinary text, punctuation included.
const prose = "We stayed three nights at the cottage by the lake, and the kids loved the canoe. " +
	"The kitchen was well stocked (two kettles!), the beds were comfortable and the host " +
	"left fresh bread every morning. Parking is tight: two cars at most. Wi-Fi was slow " +
	"in the evening, fine otherwise. We'd come back in September, when it's quieter. "

// fill returns about n bytes of prose.
func fill(n int) string {
	s := strings.Repeat(prose, n/len(prose)+1)
	return strings.TrimSpace(s[:n])
}

// place puts payload p into one part of a request; loc names the part.
// Every place is one a real application reads input from.
func place(cat, loc, p string) entry {
	e := entry{Category: cat, Method: "GET", Headers: browser()}
	qe := url.QueryEscape
	switch loc {
	case "q": // a search box
		e.Path = "/search?q=" + qe(p) + "&page=1"
	case "qraw": // the same, as sent by hand
		e.Path = "/products?sort=price&filter=" + looseEscape(p)
	case "argname": // the payload as a parameter's name
		e.Path = "/catalog?" + qe(p) + "=1&lang=en"
	case "path": // a path segment
		e.Path = "/blog/" + url.PathEscape(p)
	case "form":
		e.Method = "POST"
		e.Path = "/comments"
		e.Headers = with(e.Headers, "Content-Type", "application/x-www-form-urlencoded")
		e.Headers = with(e.Headers, "Origin", "https://"+host)
		e.Body = "author=Sam+Lee&email=sam%40example.org&text=" + qe(p) + "&submit=Post"
	case "bigform": // a 4 KiB review form, the payload in the middle
		e.Method = "POST"
		e.Path = "/reviews/new"
		e.Headers = with(e.Headers, "Content-Type", "application/x-www-form-urlencoded")
		e.Body = "first_name=Maria&last_name=Okafor&stay=2024-05-03&rating=4&title=" + qe(fill(60)) +
			"&review=" + qe(fill(1900)) + "&tip=" + qe(p) + "&more=" + qe(fill(1900)) + "&consent=on"
	case "mp": // a multipart text field
		e.Method = "POST"
		e.Path = "/profile"
		ct, body := multipart(
			[4]string{"display_name", "", "", "Robin"},
			[4]string{"about", "", "", p},
			[4]string{"avatar", "me.png", "image/png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"})
		e.Headers = with(e.Headers, "Content-Type", ct)
		e.Body = body
	case "mpfile": // the payload as the content of an uploaded text file
		e.Method = "POST"
		e.Path = "/upload"
		ct, body := multipart(
			[4]string{"folder", "", "", "notes"},
			[4]string{"file", "notes.txt", "text/plain", p})
		e.Headers = with(e.Headers, "Content-Type", ct)
		e.Body = body
	case "json": // a JSON API
		e.Method = "POST"
		e.Path = "/api/v1/notes"
		e.Headers = apiHeaders()
		e.Body = jsonText(map[string]any{"title": "groceries", "body": p, "tags": []string{"home", "weekly"}, "pinned": false})
	case "xml": // a SOAP-ish XML API
		e.Method = "POST"
		e.Path = "/ws/orders"
		e.Headers = with(e.Headers, "Content-Type", "text/xml; charset=utf-8")
		e.Body = `<?xml version="1.0" encoding="UTF-8"?><order><customer>Kim</customer><note>` +
			xmlEscape(p) + `</note></order>`
	case "cookie":
		e.Headers = with(e.Headers, "Cookie", "sid=7f3a9c2e1b4d5a60; lang=en; last_search="+cookieSafe(p))
		e.Path = "/account"
	case "ua":
		e.Headers = with(e.Headers, "User-Agent", headerSafe(p))
		e.Path = "/"
	case "ref":
		e.Headers = with(e.Headers, "Referer", "https://"+host+"/search?q="+looseEscape(p))
		e.Path = "/products/1042"
	case "hdr": // an application header an API might log
		e.Headers = with(e.Headers, "X-Request-Source", headerSafe(p))
		e.Path = "/api/v1/status"
	default:
		panic("unknown place " + loc)
	}
	return e
}

// apiHeaders: a mobile app talking JSON.
func apiHeaders() [][2]string {
	return [][2]string{
		{"Host", host},
		{"User-Agent", "ShopApp/5.12.1 (Android 14; Pixel 8)"},
		{"Accept", "application/json"},
		{"Accept-Encoding", "gzip"},
		{"Content-Type", "application/json; charset=utf-8"},
		{"Authorization", "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0MiIsImV4cCI6MTcxNjAwMDAwMH0.c2lnbmF0dXJlLW5vdC1yZWFs"},
	}
}

// spread places each payload in n places, rotating through locs so that
// every place gets payloads of the category.
func spread(c *corpus, cat string, payloads []string, locs []string, n int) {
	k := 0
	for _, p := range payloads {
		for j := 0; j < n; j++ {
			loc := locs[k%len(locs)]
			k++
			c.add(place(cat, loc, p), loc)
		}
	}
}
