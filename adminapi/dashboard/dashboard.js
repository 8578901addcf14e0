"use strict";
// lbd dashboard: polls api/state every second, turns counter deltas into
// rates, and enables or disables services and backends through
// api/enable with the token api/token gives to this origin only; polls
// api/history for the graphs and the timeline (graphs.js, inlined below
// by the server). It asks for one page of PAGE services at a time (with
// a filter), so that 10,000 services stay as light as ten: the table is
// rebuilt every second, and only the page's rows and graphs exist.
(function () {
  const POLL_MS = 1000;
  const PAGE = 100;
  let token = null;
  let prev = null;       // previous api/state reply
  let busy = false;
  let offset = 0;        // the page's first service, counted over the matches
  let filter = "";       // api/state's q

  function stateURL() {
    return "api/state?offset=" + offset + "&limit=" + PAGE + (filter ? "&q=" + encodeURIComponent(filter) : "");
  }

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v;
      else if (k.startsWith("data-")) e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    return e;
  }

  /*GRAPHS*/

  function showMessage(text) {
    const m = document.getElementById("message");
    m.textContent = text || "";
    m.hidden = !text;
  }

  function setLive(ok) {
    const b = document.getElementById("live");
    b.textContent = ok ? "live" : "stale";
    b.className = "badge " + (ok ? "live" : "stale");
  }

  function key(l, s, b) { return l + "/" + s + "/" + b; }

  // index the previous reply's backends by listener/service/backend.
  function previous() {
    const m = new Map();
    if (!prev) return m;
    for (const l of prev.listeners)
      for (const s of l.services)
        for (const b of s.backends) m.set(key(l.index, s.index, b.index), b);
    return m;
  }

  function fmtRate(x) { return x === null ? "–" : (x < 10 ? x.toFixed(1) : Math.round(x)); }
  function fmtMS(ns) { return ns < 0 ? "–" : (ns / 1e6).toFixed(ns < 1e7 ? 2 : 0) + " ms"; }

  // rates of backend b against its previous reading p over dt seconds.
  function rates(b, p, dt) {
    const answered = x => x.hits_2xx + x.hits_3xx + x.hits_4xx + x.hits_5xx;
    if (!p || dt <= 0) return { rps: null, eps: null, lat: b.latency_ns };
    const n = answered(b) - answered(p);
    const lat = n > 0 ? (b.latency_total_ns - p.latency_total_ns) / n : b.latency_ns;
    return {
      rps: Math.max(0, b.requests - p.requests) / dt,
      eps: Math.max(0, (b.errors + b.hits_5xx) - (p.errors + p.hits_5xx)) / dt,
      lat: lat,
    };
  }

  function stateBadge(b) {
    if (b.kind !== "backend") return el("span", { class: "badge special" }, b.kind);
    if (!b.enabled) return el("span", { class: "badge disabled" }, "disabled");
    return el("span", { class: "badge " + (b.alive ? "alive" : "dead") }, b.alive ? "alive" : "dead");
  }

  function toggle(l, s, b, enabled, label) {
    const button = el("button", { type: "button", "data-action": enabled ? "enable" : "disable" },
      enabled ? "Enable" : "Disable");
    button.title = (enabled ? "Enable " : "Disable ") + label;
    button.addEventListener("click", () => setEnabled(l, s, b, enabled));
    return button;
  }

  function header() {
    return el("tr", {}, el("th", { class: "name" }, "service / backend"), el("th", {}, "state"),
      el("th", {}, "req/s"), el("th", {}, "err/s"), el("th", {}, "latency"), el("th", {}, "active"),
      el("th", {}, "requests"), el("th", {}, "2xx/3xx/4xx/5xx"), el("th", {}, "sessions"), el("th", {}, ""));
  }

  // focusPath names the focused section or button of main by its data
  // attributes, so that the focus survives the table's rebuild each
  // second (a keyboard user would lose their place otherwise).
  function focusPath(main) {
    const a = document.activeElement;
    if (!a || !main.contains(a)) return null;
    const sec = a.closest("section.listener");
    if (!sec) return null;
    let path = 'section[data-listener="' + sec.dataset.listener + '"]';
    if (a === sec) return path;
    const row = a.closest("tr");
    if (!row || a.tagName !== "BUTTON") return null;
    const attr = row.dataset.backend !== undefined ? "data-backend" : "data-service";
    return path + " tr[" + attr + '="' + row.getAttribute(attr) + '"] button';
  }

  function render(st) {
    const old = previous();
    const dt = prev ? (st.time_ms - prev.time_ms) / 1000 : 0;
    const main = document.getElementById("listeners");
    const out = [];
    for (const l of st.listeners) {
      const title = l.index < 0 ? "global services" :
        "listener " + l.number + (l.name ? " “" + l.name + "”" : "");
      const sub = l.index < 0 ? "" : l.protocol + " " + l.address + " · " + l.connections + " connection(s) · generated 3xx/4xx/5xx " +
        l.hits_3xx + "/" + l.hits_4xx + "/" + l.hits_5xx + (l.enabled ? "" : " · DISABLED");
      const table = el("table", {}, header());
      for (const s of l.services) {
        let rps = 0, eps = 0, known = false;
        const rows = [];
        for (const b of s.backends) {
          const r = rates(b, old.get(key(l.index, s.index, b.index)), dt);
          if (r.rps !== null) { rps += r.rps; eps += r.eps; known = true; }
          const regular = b.kind === "backend";
          rows.push(el("tr", { class: "backend", "data-backend": key(l.index, s.index, b.index), "data-id": b.id },
            el("td", { class: "name" }, regular ? b.address : b.kind, b.emergency ? " (emergency)" : ""),
            el("td", { class: "state" }, stateBadge(b)),
            el("td", { class: "rps" }, b.kind !== "matrix" ? fmtRate(r.rps) : "–"),
            el("td", {}, b.kind !== "matrix" ? fmtRate(r.eps) : "–"),
            el("td", {}, regular ? fmtMS(r.lat) : "–"), el("td", {}, b.active),
            el("td", { class: "requests" }, b.requests),
            el("td", {}, b.hits_2xx + "/" + b.hits_3xx + "/" + b.hits_4xx + "/" + b.hits_5xx), el("td", {}, ""),
            el("td", {}, regular ? toggle(l.index, s.index, b.index, !b.enabled, b.address) : "")));
        }
        const sname = (s.name ? "“" + s.name + "”" : "service " + s.index);
        table.append(el("tr", { class: "service", "data-service": l.index + "/" + s.index },
          el("td", { class: "name" }, sname, el("span", { class: "sub" }, "sessions " + s.session_type)),
          el("td", { class: "state" }, el("span", { class: "badge " + (s.enabled ? "enabled" : "disabled") },
            s.enabled ? "enabled" : "disabled")),
          el("td", {}, known ? fmtRate(rps) : "–"), el("td", {}, known ? fmtRate(eps) : "–"),
          el("td", {}, ""), el("td", {}, ""), el("td", {}, ""), el("td", {}, ""),
          el("td", { class: "sessions" }, s.sessions),
          el("td", {}, toggle(l.index, s.index, -1, !s.enabled, sname))), ...rows);
      }
      // focusable, so that a keyboard can scroll a table wider than a phone
      const sec = el("section", { class: "listener", "data-listener": String(l.index), tabIndex: 0 },
        el("h2", {}, title, el("span", { class: "sub" }, sub)), table);
      sec.setAttribute("aria-label", title);
      out.push(sec);
    }
    const focus = focusPath(main);
    main.replaceChildren(...out);
    if (focus) { const f = main.querySelector(focus); if (f) f.focus({ preventScroll: true }); }
    document.getElementById("meta").textContent = "version " + st.version + " · pid " + st.pid +
      " · up " + Math.floor(st.uptime_s) + " s · " + new Date(st.time_ms).toLocaleTimeString();
    prev = st;
  }

  // renderPager shows where the page is; hidden while one page holds
  // every service and no filter is set.
  function renderPager(page) {
    document.getElementById("pager").hidden = page.total <= PAGE && !filter && page.offset === 0;
    const from = page.total ? Math.min(page.offset + 1, page.total) : 0;
    document.getElementById("range").textContent = "services " + from + "–" +
      Math.min(page.offset + page.limit, page.total) + " of " + page.total;
    document.getElementById("prev").disabled = page.offset <= 0;
    document.getElementById("next").disabled = page.offset + page.limit >= page.total;
  }

  // goTo shows the page from service o: the rates and graphs start over.
  function goTo(o) {
    offset = Math.max(0, o);
    prev = null;
    resetHistory();
    poll();
  }

  async function poll() {
    if (busy) return;
    busy = true;
    try {
      const url = stateURL();
      const r = await fetch(url, { cache: "no-store", credentials: "same-origin" });
      if (!r.ok) throw new Error("api/state: HTTP " + r.status);
      const st = await r.json();
      if (url !== stateURL()) return; // the page changed meanwhile: the next poll has it
      if (st.page) {
        renderPager(st.page);
        // the filter matched fewer: back to the last page that has some
        if (st.page.offset > 0 && st.page.offset >= st.page.total) { offset = Math.max(0, st.page.total - PAGE); return; }
      }
      render(st);
      await pollHistory(st);
      setLive(true);
    } catch (e) {
      setLive(false);
    } finally {
      busy = false;
    }
  }

  async function getToken() {
    const r = await fetch("api/token", { cache: "no-store", credentials: "same-origin" });
    if (!r.ok) throw new Error("api/token: HTTP " + r.status);
    token = (await r.json()).token;
  }

  async function setEnabled(l, s, b, enabled) {
    try {
      if (!token) await getToken();
      const r = await fetch("api/enable", {
        method: "POST", credentials: "same-origin", cache: "no-store",
        headers: { "Content-Type": "application/json", "X-LBD-Token": token },
        body: JSON.stringify({ listener: l, service: s, backend: b, enabled: enabled }),
      });
      const reply = await r.json().catch(() => ({}));
      if (!r.ok) throw new Error(reply.reason || "HTTP " + r.status);
      showMessage("");
    } catch (e) {
      showMessage("Could not " + (enabled ? "enable" : "disable") + ": " + e.message);
    }
    poll();
  }

  document.getElementById("prev").addEventListener("click", () => goTo(offset - PAGE));
  document.getElementById("next").addEventListener("click", () => goTo(offset + PAGE));
  let typing = null;
  document.getElementById("filter").addEventListener("input", e => {
    clearTimeout(typing);
    typing = setTimeout(() => { filter = e.target.value.trim(); goTo(0); }, 250);
  });

  getToken().catch(e => showMessage(e.message));
  poll();
  setInterval(poll, POLL_MS);
})();
