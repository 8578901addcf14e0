// Graphs and timeline: api/history gives, per service ("L/S") and per
// backend ("L/S/ID"), one point a second over the last 15 minutes, and
// the event timeline; this part keeps them and draws plain inline SVG.
const HIST = {
  series: new Map(),   // key -> {t, rps, eps, mean_ms, p50_ms, p99_ms, active}
  since: 0,            // newest point time we have (ms)
  events: [],          // newest first
  eventSeq: 0,
  maxSpanMS: 900000,
  spanMS: 60000,       // what the x axis shows: the history lbd has, 1 to 15 min
  cards: new Map(),    // service key -> {root, select, charts}
};
const MEASURES = ["t", "rps", "eps", "mean_ms", "p50_ms", "p99_ms", "active"];
const CHARTS = [
  { id: "rps", title: "requests/s", lines: [["rps", "#1f6fb2"]] },
  { id: "eps", title: "errors/s", lines: [["eps", "#b3261e"]] },
  { id: "lat", title: "p50 / p99 ms", key: true, lines: [["p50_ms", "#1b7f3b"], ["p99_ms", "#a05a00"]] },
  { id: "active", title: "active connections", lines: [["active", "#6a4fa3"]] },
];
const SVGNS = "http://www.w3.org/2000/svg";

function mergeHistory(h) {
  for (const [k, s] of Object.entries(h.series)) {
    let cur = HIST.series.get(k);
    if (!cur) { cur = {}; for (const m of MEASURES) cur[m] = []; HIST.series.set(k, cur); }
    for (const m of MEASURES) cur[m].push(...s[m]);
    const n = s.t.length;
    if (n) HIST.since = Math.max(HIST.since, s.t[n - 1]);
  }
  // forget objects gone from lbd, and points older than the span
  for (const k of [...HIST.series.keys()]) if (!(k in h.series)) HIST.series.delete(k);
  const oldest = h.now_ms - HIST.maxSpanMS;
  let first = h.now_ms;
  for (const cur of HIST.series.values()) {
    let i = 0;
    while (i < cur.t.length && cur.t[i] < oldest) i++;
    if (i) for (const m of MEASURES) cur[m].splice(0, i);
    if (cur.t.length) first = Math.min(first, cur.t[0]);
  }
  // A young process's few points would be a sliver at the right edge
  // of a 15-minute axis: the axis spans what there is, at least 1 min.
  HIST.spanMS = Math.min(HIST.maxSpanMS, Math.max(60000, h.now_ms - first));
  if (h.events.length) {
    HIST.events = h.events.concat(HIST.events).slice(0, 256);
    HIST.eventSeq = h.events[0].seq;
  }
  HIST.now = h.now_ms;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

function fmtAgo(ms) { return ms >= 120000 ? Math.round(ms / 60000) + " min ago" : Math.round(ms / 1000) + " s ago"; }

function fmtNum(x) { return x < 0 ? "–" : (x < 10 ? x.toFixed(x < 1 && x > 0 ? 2 : 1) : String(Math.round(x))); }

// drawChart fills fig with a line chart of s's measures over the span.
function drawChart(fig, spec, s) {
  const W = 300, H = 70;
  const t1 = HIST.now, t0 = t1 - HIST.spanMS;
  let peak = 0, last = [];
  if (s) for (const [m] of spec.lines) for (const v of s[m]) peak = Math.max(peak, v);
  const top = peak > 0 ? peak * 1.1 : 1;
  const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none", role: "img", class: "chart" });
  for (const y of [0.25, 0.5, 0.75]) g.append(svg("line", { x1: 0, x2: W, y1: H * y, y2: H * y, class: "grid" }));
  let npoints = 0;
  if (s) for (const [m, color] of spec.lines) {
    const pts = [];
    for (let i = 0; i < s.t.length; i++) {
      const v = s[m][i];
      if (v < 0) continue; // no latency known that second
      pts.push(((s.t[i] - t0) / HIST.spanMS * W).toFixed(1) + "," + (H - v / top * H).toFixed(1));
    }
    npoints += pts.length;
    if (pts.length) g.append(svg("polyline", { points: pts.join(" "), stroke: color, fill: "none",
      "stroke-width": 1.5, "vector-effect": "non-scaling-stroke" }));
    const vs = s[m].filter(v => v >= 0);
    last.push(vs.length ? vs[vs.length - 1] : -1);
  }
  const now = spec.lines.map(([m], i) => fmtNum(last[i] ?? -1)).join(" / ");
  g.setAttribute("aria-label", spec.title + ": now " + now + ", peak " + fmtNum(peak) +
    " since " + fmtAgo(HIST.spanMS));
  fig.dataset.points = String(npoints);
  // the latency chart's two lines are told apart by the caption's colours
  const caption = spec.key ? [el("span", { class: "k-p50" }, "p50"), " / ", el("span", { class: "k-p99" }, "p99"), " ms"]
    : [spec.title];
  fig.replaceChildren(
    el("figcaption", {}, el("span", {}, ...caption), el("span", { class: "now" }, now)),
    g,
    el("div", { class: "axis" }, el("span", {}, fmtAgo(HIST.spanMS)), el("span", {}, "peak " + fmtNum(peak)),
      el("span", {}, "now")));
}

// card returns (making it once) the graphs of service key skey.
function card(skey, title) {
  let c = HIST.cards.get(skey);
  if (c) return c;
  const select = el("select", { "aria-label": "object graphed for " + title });
  const charts = CHARTS.map(spec => el("figure", { class: "graph", "data-chart": spec.id }));
  const root = el("section", { class: "graphs", "data-graphs": skey },
    el("h3", {}, el("span", {}, title), select), el("div", { class: "charts" }, ...charts));
  select.addEventListener("change", () => drawCard(c));
  c = { root, select, charts, skey };
  HIST.cards.set(skey, c);
  return c;
}

function drawCard(c) {
  const s = HIST.series.get(c.select.value || c.skey);
  CHARTS.forEach((spec, i) => drawChart(c.charts[i], spec, s));
}

// renderGraphs lays out one card per service of st, its select listing
// the service total and each backend.
function renderGraphs(st) {
  const cards = [];
  for (const l of st.listeners) for (const s of l.services) {
    const skey = l.index + "/" + s.index;
    const title = (s.name ? "“" + s.name + "”" : "service " + s.index) + (l.index < 0 ? " (global)" : " · listener " + l.number);
    const c = card(skey, title);
    const opts = [[skey, "whole service"]];
    s.backends.forEach((b, i) => {
      if (b.kind === "matrix") return;
      opts.push([skey + "/" + (b.id ? b.id : "#" + i), b.kind === "backend" ? "backend " + b.address : b.kind + " backend"]);
    });
    const want = opts.map(o => o[0]).join("\n");
    if (c.select.dataset.opts !== want) {
      const keep = c.select.value;
      c.select.replaceChildren(...opts.map(([v, label]) => el("option", { value: v }, label)));
      if (opts.some(o => o[0] === keep)) c.select.value = keep;
      c.select.dataset.opts = want;
    }
    drawCard(c);
    cards.push(c.root);
  }
  for (const k of [...HIST.cards.keys()]) if (!cards.includes(HIST.cards.get(k).root)) HIST.cards.delete(k);
  document.getElementById("graphs").replaceChildren(...cards);
}

function renderEvents() {
  const list = document.getElementById("events");
  if (!HIST.events.length) { list.replaceChildren(el("li", { class: "none" }, "nothing yet")); return; }
  list.replaceChildren(...HIST.events.map(e => el("li", { "data-kind": e.kind, "data-seq": String(e.seq) },
    el("time", { dateTime: new Date(e.time_ms).toISOString() }, new Date(e.time_ms).toLocaleTimeString()),
    el("span", { class: "badge ev-" + e.kind }, e.kind),
    el("span", { class: "object" }, e.object || "lbd"),
    e.detail ? el("span", { class: "detail" }, e.detail) : "",
    e.who ? el("span", { class: "who" }, "by " + e.who) : "")));
}

// resetHistory forgets the graphs' points: another page of services is
// shown, whose series are asked for from the start.
function resetHistory() {
  HIST.series.clear();
  HIST.since = 0;
}

async function pollHistory(st) {
  // A page asks only for its services' series (and their backends').
  const keys = st.page ? "&services=" + st.listeners.flatMap(l => l.services.map(s => l.index + "/" + s.index)).join(",") : "";
  const r = await fetch("api/history?since=" + HIST.since + "&events=" + HIST.eventSeq + keys,
    { cache: "no-store", credentials: "same-origin" });
  if (!r.ok) throw new Error("api/history: HTTP " + r.status);
  const h = await r.json();
  document.getElementById("history").hidden = !h.observed;
  mergeHistory(h);
  renderGraphs(st);
  renderEvents();
}
