// slowsrv's live page: polls /stats once a second while it is open and draws what it says.
// Every value from the server goes into the page as text (textContent) or as a number in an
// SVG attribute: route paths and bodies come from the config and the control API.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const HISTORY = 300; // seconds of overshoot kept for the line chart
const $ = (id) => document.getElementById(id);

let prev = null;      // the previous /stats and when it came
const overshoot = []; // {t, p50, p99} per poll, from bucket deltas of every route
let control = null;   // {url, token} when the control API is on

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function fmt(n, digits) {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  if (Math.abs(n) >= 1000) return Math.round(n).toLocaleString("en");
  return n.toFixed(digits === undefined ? 1 : digits);
}

// A duration to the server's precision (1 %): three or four significant digits.
function fmtMs(ms) {
  if (ms === null || ms < 0) return "–";
  if (ms >= 1000) return fmt(ms / 1000, 3) + " s";
  return fmt(ms, ms < 1 ? 3 : ms < 10 ? 2 : 1) + " ms";
}

// The bucket bound (ms) under which a share q of the observations fall; -1 past the last.
// Quantile q (ms) of a distribution given as [lowest ms, count] pairs in order, or null if empty.
function quantile(dist, q) {
  const total = dist.reduce((a, [, n]) => a + n, 0);
  if (!total) return null;
  const need = Math.max(1, Math.ceil(total * q));
  let acc = 0;
  for (const [ms, n] of dist) {
    acc += n;
    if (acc >= need) return ms;
  }
  return dist[dist.length - 1][0];
}

function card(parent, name, value, key) {
  const c = el("div", null, "card");
  if (key) c.dataset.card = key;
  c.append(el("div", value, "v"), el("div", name, "n"));
  parent.append(c);
}

// Event streams, all routes added up: open now, and events sent since the previous poll.
function streamTotals(s) {
  let open = 0, events = 0;
  for (const r of Object.values(s.routes || {})) {
    if (!r.streams) continue;
    open += r.streams.open;
    events += r.streams.events;
  }
  return { open, events };
}

function summary(s, dt) {
  const box = $("summary");
  box.replaceChildren();
  const rate = prev && dt > 0 ? (s.requests - prev.s.requests) / dt : null;
  card(box, "requests/s", rate === null ? "–" : fmt(Math.max(rate, 0)));
  card(box, "in flight", s.in_flight);
  card(box, "waiting on a delay", s.waiting);
  card(box, "queued for a worker", s.workers ? s.workers.queued : 0);
  card(box, "requests this run", s.requests);
  card(box, "cancels", s.cancels);
  card(box, "faults", s.faults);
  card(box, "connections open", s.connections ? s.connections.open : "–");
  const st = streamTotals(s);
  const evRate = prev && dt > 0 ? Math.max(st.events - streamTotals(prev.s).events, 0) / dt : null;
  card(box, "streams open", st.open, "streams");
  card(box, "events/s", evRate === null ? "–" : fmt(evRate), "events");
  // WebSocket sockets (every route's): open now, and messages each way since the previous poll.
  const msgs = ws => ws ? ws.messages_in + ws.messages_out : 0;
  const sock = s.websocket || { open: 0 };
  const msgRate = prev && dt > 0 && prev.s.websocket ? Math.max(msgs(sock) - msgs(prev.s.websocket), 0) / dt : null;
  card(box, "sockets open", sock.open, "sockets");
  card(box, "messages/s", msgRate === null ? "–" : fmt(msgRate), "messages");
  $("uptime").textContent = "up " + fmt(s.uptime_s, 0) + " s" +
    (s.resets ? " · run " + (s.resets + 1) + " (reset " + new Date(s.reset_at * 1000).toLocaleTimeString() + ")" : "");
  const w = s.workers;
  $("serverwide").textContent = w
    ? "Worker pools, all added up: " + w.size + " workers, " + w.active + " busy, " + w.queued +
      " queued, " + w.rejected + " refused."
    : "No worker pool (--workers): every request waits on its own timer.";
}

function routes(s, dt) {
  const body = $("routes").tBodies[0];
  body.replaceChildren();
  const counted = new Set(((s.config && s.config.routes) || []).map((r) => r.path));
  for (const [path, r] of Object.entries(s.routes || {})) {
    // The load's routes: /healthz, /stats, /metrics and this page are never counted.
    if (path === "other" ? !r.requests : !counted.has(path)) continue;
    const was = prev && prev.s.routes && prev.s.routes[path];
    const rate = was && dt > 0 ? Math.max(r.requests - was.requests, 0) / dt : null;
    const tr = el("tr");
    tr.dataset.route = path;
    const statuses = Object.entries(r.status || {}).map(([c, n]) => c + "×" + n).join("  ");
    const svc = r.service_ms || {};
    const sv = r.streams || { open: 0, events: 0 };
    const evRate = was && was.streams && dt > 0 ? Math.max(sv.events - was.streams.events, 0) / dt : null;
    tr.append(el("td", path, "path"), el("td", rate === null ? "–" : fmt(rate), "rate"),
      el("td", statuses || "–"), el("td", r.in_flight), el("td", r.waiting), el("td", r.queued),
      el("td", r.cancels), el("td", r.faults),
      el("td", svc.count ? fmtMs(svc.p50) + " / " + fmtMs(svc.p99) : "–", "service"),
      el("td", sv.open, "streams"), el("td", evRate === null ? "–" : fmt(evRate), "events"));
    body.append(tr);
  }
}

function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}

// Axes and a polyline per series, on a 480 x 240 box: x from 0 to 1, y from 0 to 1.
function plot(svg, series, xlabels, ylabels) {
  svg.replaceChildren();
  const L = 46, R = 470, T = 10, B = 210;
  svg.append(svgEl("line", { x1: L, y1: B, x2: R, y2: B, class: "axis" }),
    svgEl("line", { x1: L, y1: T, x2: L, y2: B, class: "axis" }));
  for (const [x, label] of xlabels)
    svg.append(svgEl("text", { x: L + x * (R - L), y: B + 14, "text-anchor": "middle" }, label));
  for (const [y, label] of ylabels)
    svg.append(svgEl("text", { x: L - 4, y: B - y * (B - T) + 3, "text-anchor": "end" }, label));
  for (const s of series) {
    if (s.points.length < 2) continue;
    const pts = s.points.map(([x, y]) =>
      (L + x * (R - L)).toFixed(1) + "," + (B - Math.min(Math.max(y, 0), 1) * (B - T)).toFixed(1));
    svg.append(svgEl("polyline", { points: pts.join(" "), class: s.cls }));
  }
}

// The CDF of the intended delay and of the service time of one route, on a log time axis.
function cdf(s) {
  const sel = $("cdfroute");
  const names = Object.keys(s.routes || {}).filter((p) => (s.routes[p].service_ms || {}).count);
  const keep = sel.value;
  if ([...sel.options].map((o) => o.value).join("\n") !== names.join("\n")) {
    sel.replaceChildren(...names.map((n) => { const o = el("option", n); o.value = n; return o; }));
    if (names.includes(keep)) sel.value = keep;
  }
  const r = s.routes && s.routes[sel.value];
  const hists = r ? [r.delay_intended_ms, r.service_ms].filter((h) => h && h.count && h.dist) : [];
  if (!hists.length) { plot($("cdf"), [], [], []); return; }
  // The server's buckets are 1 % wide: the curve is drawn at that resolution, on a log axis.
  const all = hists.flatMap((h) => h.dist.map(([ms]) => ms)).filter((ms) => ms > 0);
  const least = Math.max(Math.min(...all, 1) / 2, 0.001), most = Math.max(...all, least * 10) * 1.05;
  const lo = Math.log10(least), hi = Math.log10(most);
  const x = (ms) => (Math.log10(Math.max(ms, least)) - lo) / (hi - lo);
  const curve = (h) => {
    const pts = [[0, 0]];
    let acc = 0;
    for (const [ms, n] of h.dist) {
      pts.push([x(ms), acc / h.count]);
      acc += n;
      pts.push([x(ms), acc / h.count]);
    }
    pts.push([1, 1]);
    return pts;
  };
  const xl = [0.01, 0.1, 1, 10, 100, 1000, 10000, 60000].filter((v) => v >= least && v <= most)
    .map((v) => [x(v), fmtMs(v)]);
  plot($("cdf"), [{ cls: "intended", points: r.delay_intended_ms.count ? curve(r.delay_intended_ms) : [] },
    { cls: "service", points: curve(r.service_ms) }], xl, [[0, "0"], [0.5, "50%"], [1, "100%"]]);
}

// Overshoot p50 and p99 of the last second, from the bucket deltas of every route.
function trackOvershoot(s, t) {
  if (!prev) return;
  const delta = new Map();
  for (const [path, r] of Object.entries(s.routes || {})) {
    const was = prev.s.routes && prev.s.routes[path];
    const before = new Map(((was && was.delay_overshoot_ms && was.delay_overshoot_ms.dist) || []));
    for (const [ms, n] of (r.delay_overshoot_ms && r.delay_overshoot_ms.dist) || [])
      delta.set(ms, (delta.get(ms) || 0) + Math.max(n - (before.get(ms) || 0), 0));
  }
  const dist = [...delta.entries()].filter(([, n]) => n > 0).sort((a, b) => a[0] - b[0]);
  overshoot.push({ t, p50: quantile(dist, 0.5), p99: quantile(dist, 0.99) });
  while (overshoot.length && t - overshoot[0].t > HISTORY) overshoot.shift();
  const seen = overshoot.filter((o) => o.p99 !== null);
  const top = Math.max(1, ...seen.map((o) => o.p99));
  const pts = (k) => seen.map((o) => [1 - (t - o.t) / HISTORY, o[k] / top]);
  plot($("overshoot"), [{ cls: "p50", points: pts("p50") }, { cls: "p99", points: pts("p99") }],
    [[0, "-5 min"], [0.5, "-2.5 min"], [1, "now"]], [[0, "0"], [1, fmtMs(top)]]);
}

// A route's bandwidth and mid-body faults, as its config gives them ("rate 1M · stall 64K,5000ms").
const PACE_KEYS = ["rate", "read-rate", "reset-after", "stall", "slow-close"];
function pace(r) {
  return PACE_KEYS.filter((k) => r[k]).map((k) => k + " " + r[k]).join(" · ");
}

function config(s) {
  const c = s.config || {};
  $("cfgline").textContent = "seed " + c.seed + (c.seed_given ? " (--seed)" : " (random: give --seed to repeat a run)") +
    " · generation " + (s.control ? s.control.generation : 1) +
    (c.workers ? " · --workers " + c.workers + ", --queue " + c.queue : "");
  const body = $("config").tBodies[0];
  body.replaceChildren();
  for (const r of c.routes || []) {
    const tr = el("tr");
    tr.append(el("td", r.path, "path"), el("td", r.method), el("td", r.delay || "none"),
      el("td", r.status), el("td", r["error-rate"] ? r["error-rate"] + " → " + r["error-status"] : "0"),
      el("td", r.drip || ""), el("td", r.fault || ""), el("td", pace(r), "pace"),
      el("td", r.stream || "", "stream"), el("td", r.websocket || "", "websocket"),
      el("td", r.workers ? r.workers + " workers, queue " + r.queue : ""));
    body.append(tr);
  }
  const box = $("scenario");
  box.replaceChildren();
  const sc = s.scenario;
  if (!sc) return;
  box.append(el("h2", "Scenario" + (sc.running ? " (running, " + fmt(sc.elapsed_s, 0) + " s)" : " (stopped)")));
  const line = el("div", null, "timeline");
  sc.phases.forEach((p, i) => {
    const cls = "phase" + (i === sc.phase ? " now" : i < sc.phase ? " done" : "");
    line.append(el("div", fmt(p.at_s, 0) + " s · " + (p.name || "phase " + i), cls));
  });
  box.append(line);
}

function setupControl(s) {
  const c = s.control || {};
  if (!c.url || control) return;
  control = { url: c.url, token: c.token };
  $("readonly").hidden = true;
  $("change").hidden = false;
  $("c-token-label").hidden = !c.token;
  $("change").addEventListener("submit", (ev) => { ev.preventDefault(); apply(); });
}

function routeChoices(s) {
  if (!control) return;
  const sel = $("c-route");
  const names = ((s.config && s.config.routes) || []).filter((r) => r.editable).map((r) => r.path);
  if ([...sel.options].map((o) => o.value).join("\n") === names.join("\n")) return;
  const keep = sel.value;
  sel.replaceChildren(...names.map((n) => { const o = el("option", n); o.value = n; return o; }));
  if (names.includes(keep)) sel.value = keep;
}

async function apply() {
  const patch = {};
  const d = $("c-delay").value.trim(), st = $("c-status").value.trim(), er = $("c-error").value.trim();
  if (d) patch.delay = d;
  if (st) patch.status = Number(st);
  if (er) patch["error-rate"] = Number(er);
  const rt = $("c-rate").value.trim();
  if (rt) patch.rate = rt;
  const out = $("c-result");
  if (!Object.keys(patch).length) { out.textContent = "nothing to change"; out.className = "err"; return; }
  const headers = { "Content-Type": "application/json" };
  const token = $("c-token").value;
  if (token) headers.Authorization = "Bearer " + token;
  const path = $("c-route").value;
  try {
    const res = await fetch(control.url + "/routes" + path.split("/").map(encodeURIComponent).join("/"),
      { method: "PATCH", headers, body: JSON.stringify(patch), mode: "cors", cache: "no-store" });
    const j = await res.json();
    out.textContent = res.ok ? "generation " + j.generation + ": " + path + " changed" : res.status + ": " + j.error;
    out.className = res.ok ? "ok" : "err";
  } catch (e) {
    out.textContent = "the control API did not answer (" + e.message + ")";
    out.className = "err";
  }
}

async function poll() {
  try {
    const res = await fetch("/stats", { cache: "no-store" });
    const s = await res.json();
    // The server's own clock: rates hold in a browser whose clock runs otherwise (headless).
    const t = s.uptime_s;
    const dt = prev ? t - prev.t : 0;
    if (prev && s.resets !== prev.s.resets) prev = null; // a new run: no rates across it
    summary(s, dt);
    routes(s, dt);
    trackOvershoot(s, t);
    cdf(s);
    config(s);
    setupControl(s);
    routeChoices(s);
    prev = { s, t };
    $("conn").textContent = "live · " + new Date().toLocaleTimeString();
  } catch (e) {
    $("conn").textContent = "no answer from the server (" + e.message + ")";
  }
  setTimeout(poll, 1000);
}

poll();
