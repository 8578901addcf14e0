package main

import (
	"net/url"
	"strings"
)

// Ordinary traffic of a shop with a blog, an app and an API: what a WAF
// must let through. Some of it looks like an attack to a pattern (a
// search for "select a dress", an apostrophe in a name, HTML from a CMS
// editor, a GraphQL query); both engines should stumble on the same ones.

var pages = []string{
	"/", "/products/1042", "/category/shoes?page=2&sort=price_asc", "/static/css/site.3f2a91.css",
	"/static/js/app.7c1e.min.js", "/images/logo@2x.png", "/favicon.ico", "/blog/2024/05/how-we-pack-orders",
	"/account/orders?status=shipped&year=2024", "/fr/produits/chaussures-de-randonn%C3%A9e",
	"/de/gr%C3%B6%C3%9Fen-tabelle", "/ja/%E5%95%86%E5%93%81/%E9%9D%B4", "/robots.txt", "/sitemap.xml",
	"/manifest.webmanifest", "/fonts/inter-var.woff2", "/cart", "/checkout/shipping",
	"/store-locator?lat=48.8566&lng=2.3522&radius=10km", "/products?color=navy%20blue&size=M&size=L",
	"/events?from=2024-06-01&to=2024-06-30", "/u/jane.doe", "/tag/c%2B%2B", "/compare?items=A-100|B-200",
	"/download/report-Q2_2024.pdf", "/wiki/Special:Search?search=Bill+O%27Reilly",
	"/oauth/callback?code=4/0AbCdEf-GhIj_klMn&state=xyz123&scope=email%20profile",
	"/track?utm_source=newsletter&utm_medium=email&utm_campaign=summer_sale_2024", "/video/stream.m3u8",
	"/images/products/1042/main.webp?w=640&h=480&fit=crop", "/.well-known/security.txt",
	"/account/settings/notifications", "/orders/2024-000123/invoice", "/search/suggest?prefix=sneak",
	"/index.php?route=product/category&path=20_27", "/blog/tag/how-to?ref=footer", "/help/faq?section=returns&lang=en-GB",
	"/p/summer-dress-floral-print-2024-collection-limited-edition", "/assets/img/hero-banner-1920x1080.jpg?v=20240501",
	"/en-us/stores/new-york/5th-avenue", "/news?page=3&per_page=50&order=desc",
}

var searches = []string{
	"red running shoes", "c++ templates", "rock & roll t-shirt", "O'Reilly books", "what's new?", "50% off",
	"alice.b@example.org", "1/2 cup measuring", "price < 100", `"exact phrase"`, "select a dress for a wedding",
	"union station chicago hotels", "drop shipping supplier", "script writing class", "alert me when back in stock",
	"café crème", "東京 ラーメン", "Привет мир", "party 🎉 balloons", "naïve résumé template", "Größe 42 Schuhe",
	"العربية كتب", "#throwback", "10 + 20 = 30", "where to buy", "rain or shine jacket", "AT&T phone case",
	"Tom & Jerry", "sql for beginners book", "javascript for kids", "how to use <div> tags", "--help",
	"Dr. Martens 1460", "Levi's 501 jeans", "children's books (age 3-5)", "USB-C to HDMI adapter",
	"64GB [refurbished]", "{gift card}", "wifi router; mesh", "100% cotton", "don't starve", "L'Oréal shampoo",
	"pi = 3.14159", "mother's day gift ideas", "ben & jerry's", `1" pipe fitting`, `5'11" height chart`,
	"$9.99 deals", "a|b testing book", "winter-sale_2024", "émoji ❤️", "order by date", "from scratch baking",
	"update firmware", "delete account", "insert coin arcade", "table and chairs set", "where is my order",
	"kids' shoes, size 30", "50/50 raffle", "Mac & cheese", "I can't log in!", "C# in depth",
	"what is 2^10?", "ü ö ä ß", "smart tv 55\" 4k", "hello world", "Jack-o'-lantern",
}

func addBenign(c *corpus) {
	for _, p := range pages {
		c.add(entry{Category: "benign", Method: "GET", Path: p, Headers: browser()}, "page")
	}
	for i, s := range searches {
		e := entry{Category: "benign", Method: "GET", Headers: browser()}
		e.Path = "/search?q=" + url.QueryEscape(s)
		if i%3 == 1 { // encodeURIComponent style: %20, not +
			e.Path = "/search?q=" + strings.ReplaceAll(url.QueryEscape(s), "+", "%20") + "&src=header"
		}
		c.add(e, "search")
	}
	addBenignForms(c)
	addBenignAPI(c)
	addBenignMisc(c)
}

func addBenignForms(c *corpus) {
	const form = "application/x-www-form-urlencoded"
	v := func(kv ...string) string {
		var b strings.Builder
		for i := 0; i+1 < len(kv); i += 2 {
			if i > 0 {
				b.WriteByte('&')
			}
			b.WriteString(url.QueryEscape(kv[i]) + "=" + url.QueryEscape(kv[i+1]))
		}
		return b.String()
	}
	bodies := []string{
		v("username", "jane.doe", "password", "Tr0ub4dor&3", "remember", "on"),
		v("email", "o'brien@example.ie", "password", "p@$$w0rd!#%^", "csrf", "c2VjcmV0LXRva2Vu"),
		v("first", "Seán", "last", "O'Connell", "street", "12 O'Connell St., Apt #4", "city", "Dublin", "zip", "D01 F5P2"),
		v("name", "Zoë", "message", "Hi! I ordered the blue one (order #2024-118) but got green.\r\nCan you swap it? Thanks :)"),
		v("newsletter", "weekly", "email", "sam+shop@example.com", "topics[]", "shoes", "topics[]", "sales"),
		v("q", "select a dress", "category", "women", "min", "20", "max", "80"),
		v("comment", "Great post -- although I'd argue that step 3 isn't needed if you use a 1/4\" drill bit."),
		v("rating", "5", "title", "Best purchase of 2024!!!", "body", "Fits perfectly; colour is exactly as shown. 10/10 would buy again."),
		v("address", "Calle de Alcalá, 48", "city", "Madrid", "phone", "+34 91 123 45 67", "notes", "Ring twice, 2º izq."),
		v("bio", "Software dev & dad. I like C, Go and long walks. Views are my own.", "website", "https://jane.example.dev/"),
		v("search", "東京 ラーメン", "lang", "ja"),
		v("gift_message", "Happy birthday, Mom! Love, R & J <3"),
		v("code", "SUMMER-2024", "apply", "1"),
		v("qty[1042]", "2", "qty[2051]", "1", "update", "Update cart"),
		v("question", "Does the 'Pro' model work with Windows 11 & macOS 14?"),
		v("feedback", "The page said \"out of stock\" but the app said 3 left; which is right?"),
		v("username", "admin", "password", "correct horse battery staple"),
		v("title", "Meeting notes", "text", "1. Select vendors\n2. Update the table of costs\n3. Drop the old plan"),
	}
	for i, b := range bodies {
		ct := form
		if i%4 == 3 { // jQuery's default
			ct = "application/x-www-form-urlencoded; charset=UTF-8"
		}
		e := post("benign", "/forms/"+[]string{"login", "account", "checkout", "contact"}[i%4], ct, b)
		e.Headers = with(e.Headers, "Origin", "https://"+host)
		c.add(e, "form")
	}
	for i := 0; i < 6; i++ { // 4 KiB review forms
		e := place("benign", "bigform", []string{"Bring a torch!", "Ask for room 4; it's quieter.", "",
			"Check-in after 3 p.m. (not earlier).", "Try the bakery at the corner & the market on Sundays.", "5/5"}[i])
		c.add(e, "bigform")
	}
	// Multipart: uploads as browsers send them.
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06\x00\x00\x00\x1f\xf3\xffa"
	parts := [][][4]string{
		{{"avatar", "me.png", "image/png", png}, {"alt", "", "", "Me on a hike"}},
		{{"doc", "contract_v2 (signed).pdf", "application/pdf", "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj"}},
		{{"import", "contacts.csv", "text/csv", "name,email\nJane Doe,jane@example.org\n\"Smith, John\",john@example.com\n"}},
		{{"title", "", "", "Vacances d'été"}, {"photo", "IMG_2041.JPG", "image/jpeg", "\xff\xd8\xff\xe1\x00\x18Exif\x00\x00"}},
		{{"message", "", "", "See attached — thanks!"}, {"attachment", "notes.txt", "text/plain", "Buy milk.\nCall Sam at 5."}},
		{{"name", "", "", "Zoë"}, {"email", "", "", "zoe@example.org"}, {"cv", "Zoë_CV.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "PK\x03\x04\x14\x00\x06\x00"}},
		{{"files[]", "a.png", "image/png", png}, {"files[]", "b.png", "image/png", png}},
		{{"comment", "", "", "Order #1042: the box arrived damaged (photo attached)."}, {"proof", "box.webp", "image/webp", "RIFF\x1a\x00\x00\x00WEBPVP8 "}},
	}
	for _, p := range parts {
		ct, body := multipart(p...)
		c.add(post("benign", "/upload", ct, body), "multipart")
	}
}

func addBenignAPI(c *corpus) {
	bodies := []any{
		map[string]any{"sku": "A-100", "qty": 2},
		map[string]any{"items": []any{map[string]any{"sku": "A-100", "qty": 1}, map[string]any{"sku": "B-7", "qty": 3}}, "coupon": nil, "gift": true},
		map[string]any{"name": "Zoë Ødegård", "city": "Tromsø", "phone": "+47 77 12 34 56"},
		map[string]any{"query": "query Product($id: ID!) { product(id: $id) { name price reviews(first: 5) { edges { node { rating text } } } } }", "variables": map[string]any{"id": "UHJvZHVjdDoxMDQy"}},
		map[string]any{"event": "page_view", "page": "/products/1042", "ts": 1716000000123, "screen": []int{1920, 1080}},
		map[string]any{"html": "<p>Hello <strong>world</strong>, see <a href=\"https://shop.example/sale\">the sale</a>.</p>"},
		map[string]any{"filters": map[string]any{"price": map[string]any{"gte": 10, "lte": 99.5}, "brand": []string{"Acme", "Globex"}}, "sort": "-rating"},
		map[string]any{"message": "Can't wait for the new collection :) When's it out?", "lang": "en"},
		map[string]any{"text": "日本語のレビュー：とても良い商品でした。", "rating": 5},
		map[string]any{"old_password": "hunter2!", "new_password": "S3cure&Long#Pass", "confirm": "S3cure&Long#Pass"},
		map[string]any{"address": map[string]any{"line1": "221B Baker Street", "line2": "Flat B", "postcode": "NW1 6XE"}},
		map[string]any{"ids": []int{12, 13, 14, 15, 16}, "fields": "name,price,stock"},
		map[string]any{"note": "Deliver between 9–11 a.m.; leave with neighbour (no. 14) if out."},
		map[string]any{"search": "select a dress", "page": 1},
		map[string]any{"deep": map[string]any{"a": map[string]any{"b": map[string]any{"c": []any{1, "two", 3.0, false}}}}},
		map[string]any{"email": "o'hara@example.com", "subscribe": true},
		map[string]any{"emoji": "👍🏽🔥", "reaction": "like"},
		map[string]any{"token": "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJpc3MiOiJodHRwczovL2lkLmV4YW1wbGUifQ.c2ln"},
	}
	paths := []string{"/api/v1/cart", "/api/v1/orders", "/api/v1/me", "/graphql", "/api/v1/events", "/api/v1/pages/7",
		"/api/v1/search", "/api/v1/messages"}
	for i, b := range bodies {
		e := entry{Category: "benign", Method: "POST", Path: paths[i%len(paths)], Headers: apiHeaders(), Body: jsonText(b)}
		c.add(e, "json")
	}
	for _, p := range []string{"/api/v1/products?ids=12,13,14&fields=name,price", "/api/v1/me", "/api/v1/orders?limit=20&cursor=eyJpZCI6MTIzfQ%3D%3D",
		"/api/v1/stores?near=52.52,13.405", "/api/v1/search?q=caf%C3%A9&lang=fr"} {
		e := entry{Category: "benign", Method: "GET", Path: p, Headers: without(apiHeaders(), "Content-Type")}
		c.add(e, "apiget")
	}
}

func addBenignMisc(c *corpus) {
	add := func(e entry) { c.add(e, "misc") }
	add(entry{Category: "benign", Method: "HEAD", Path: "/", Headers: browser()})
	add(entry{Category: "benign", Method: "HEAD", Path: "/download/report-Q2_2024.pdf", Headers: browser()})
	add(entry{Category: "benign", Method: "OPTIONS", Path: "/api/v1/cart", Headers: [][2]string{
		{"Host", host}, {"Accept", "*/*"}, {"Access-Control-Request-Method", "POST"},
		{"Access-Control-Request-Headers", "content-type,authorization"}, {"Origin", "https://www.shop.example"},
		{"User-Agent", browsers[0][5][1]}, {"Sec-Fetch-Mode", "cors"}, {"Accept-Language", "en-US,en;q=0.9"}}})
	add(entry{Category: "benign", Method: "GET", Path: "/static/js/app.7c1e.min.js", Headers: with(with(browser(),
		"If-None-Match", `W/"5e1-18f3a2b1c4d"`), "If-Modified-Since", "Tue, 14 May 2024 08:12:31 GMT")})
	add(entry{Category: "benign", Method: "GET", Path: "/media/catalog.pdf", Headers: with(browser(), "Range", "bytes=0-1023")})
	add(entry{Category: "benign", Method: "GET", Path: "/api/v1/cart", Headers: with(with(browser(), "X-Requested-With", "XMLHttpRequest"), "Accept", "application/json, text/javascript, */*; q=0.01")})
	add(entry{Category: "benign", Method: "GET", Path: "/ws", Headers: [][2]string{{"Host", host}, {"User-Agent", browsers[1][1][1]},
		{"Upgrade", "websocket"}, {"Connection", "Upgrade"}, {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
		{"Sec-WebSocket-Version", "13"}, {"Origin", "https://" + host}, {"Accept", "*/*"}}})
	e := get("benign", "/about")
	e.Proto = "HTTP/1.0"
	add(e)
	cookies := []string{
		"_ga=GA1.2.1427683012.1715001234; _gid=GA1.2.99812734.1716000000; sid=7f3a9c2e1b4d5a60",
		"consent=%7B%22ads%22%3Afalse%2C%22analytics%22%3Atrue%7D; cart=A-100%3A2%7CB-7%3A1; theme=dark",
		"session=eyJ1c2VyIjo0MiwiY3NyZiI6ImFiYyJ9.ZkYxAg.c2lnbmF0dXJl; remember_me=1; locale=pt_BR",
		"recently_viewed=1042,2051,3306,4410; currency=EUR; tz=Europe%2FParis",
		"__Host-sess=v2.Q29va2llVmFsdWU; __Secure-pref=compact; ab_test=checkout_b",
	}
	for _, ck := range cookies {
		add(entry{Category: "benign", Method: "GET", Path: "/account", Headers: with(browser(), "Cookie", ck)})
	}
	long := "prefs=" + strings.Repeat("k1%3Dv1%26", 180) + "; sid=7f3a9c2e1b4d5a60"
	add(entry{Category: "benign", Method: "GET", Path: "/account", Headers: with(browser(), "Cookie", long)})
	for _, ref := range []string{"https://www.google.com/search?q=red+running+shoes&oq=red+run&sourceid=chrome&ie=UTF-8",
		"https://duckduckgo.com/", "https://shop.example/category/shoes?page=2&sort=price_asc",
		"https://l.facebook.com/l.php?u=https%3A%2F%2Fshop.example%2Fsale&h=AT0xyz"} {
		add(entry{Category: "benign", Method: "GET", Path: "/sale", Headers: with(browser(), "Referer", ref)})
	}
	extra := [][2]string{{"Cache-Control", "max-age=0"}, {"Pragma", "no-cache"}, {"X-Forwarded-For", "203.0.113.50"},
		{"Purpose", "prefetch"}, {"Accept-Language", "zh-CN,zh;q=0.9,en;q=0.8,ja;q=0.7"},
		{"Authorization", "Basic amFuZTpzM2NyZXQ="}, {"X-Forwarded-Proto", "https"}, {"Save-Data", "on"},
		{"Priority", "u=0, i"}, {"TE", "trailers"}}
	for _, h := range extra {
		add(entry{Category: "benign", Method: "GET", Path: "/products/1042", Headers: with(browser(), h[0], h[1])})
	}
	// A chunked JSON upload (fetch with a stream body) and a POST
	// behind Expect: 100-continue (curl does that past 1 KiB).
	e = entry{Category: "benign", Method: "POST", Path: "/api/v1/events", Headers: append(apiHeaders(), [2]string{"Transfer-Encoding", "chunked"})}
	e.Body = "12\r\n{\"event\":\"scroll\"}\r\n0\r\n\r\n"
	add(e)
	e = post("benign", "/forms/contact", "application/x-www-form-urlencoded", "message="+url.QueryEscape(fill(1500)))
	e.Headers = with(e.Headers, "Expect", "100-continue")
	add(e)
}
