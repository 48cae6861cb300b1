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

function fmtMs(ms) {
  if (ms === null || ms < 0) return "–";
  return ms >= 1000 ? fmt(ms / 1000, 2) + " s" : fmt(ms, ms < 10 ? 2 : 0) + " ms";
}

// The bucket bound (ms) under which a share q of the observations fall; -1 past the last.
function quantile(buckets, le, q) {
  const total = buckets.reduce((a, b) => a + b, 0);
  if (!total) return null;
  const need = Math.ceil(total * q);
  let acc = 0;
  for (let i = 0; i < le.length; i++) {
    acc += buckets[i];
    if (acc >= need) return le[i];
  }
  return -1;
}

function card(parent, name, value) {
  const c = el("div", null, "card");
  c.append(el("div", value, "v"), el("div", name, "n"));
  parent.append(c);
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
    tr.append(el("td", path, "path"), el("td", rate === null ? "–" : fmt(rate), "rate"),
      el("td", statuses || "–"), el("td", r.in_flight), el("td", r.waiting), el("td", r.queued),
      el("td", r.cancels), el("td", r.faults),
      el("td", svc.count ? fmtMs(svc.p50_le) + " / " + fmtMs(svc.p99_le) : "–"));
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
  const le = s.bucket_le_ms || [];
  if (!r || !le.length) { plot($("cdf"), [], [], []); return; }
  const lo = Math.log10(le[0] / 2), hi = Math.log10(le[le.length - 1]);
  const x = (ms) => (Math.log10(Math.max(ms, le[0] / 2)) - lo) / (hi - lo);
  const curve = (h) => {
    const total = h.buckets.reduce((a, b) => a + b, 0);
    const pts = [[0, 0]];
    let acc = 0;
    le.forEach((bound, i) => { acc += h.buckets[i]; pts.push([x(bound), total ? acc / total : 0]); });
    return pts;
  };
  const xl = [0.1, 1, 10, 100, 1000, 10000, 60000].filter((v) => v >= le[0] / 2 && v <= le[le.length - 1])
    .map((v) => [x(v), fmtMs(v)]);
  plot($("cdf"), [{ cls: "intended", points: r.delay_intended_ms.count ? curve(r.delay_intended_ms) : [] },
    { cls: "service", points: curve(r.service_ms) }], xl, [[0, "0"], [0.5, "50%"], [1, "100%"]]);
}

// Overshoot p50 and p99 of the last second, from the bucket deltas of every route.
function trackOvershoot(s, t) {
  if (!prev) return;
  const le = s.bucket_le_ms || [];
  const delta = new Array(le.length + 1).fill(0);
  for (const [path, r] of Object.entries(s.routes || {})) {
    const was = prev.s.routes && prev.s.routes[path];
    const now = r.delay_overshoot_ms && r.delay_overshoot_ms.buckets;
    const before = was && was.delay_overshoot_ms && was.delay_overshoot_ms.buckets;
    if (!now) continue;
    now.forEach((n, i) => { delta[i] += Math.max(n - (before ? before[i] : 0), 0); });
  }
  overshoot.push({ t, p50: quantile(delta, le, 0.5), p99: quantile(delta, le, 0.99) });
  while (overshoot.length && t - overshoot[0].t > HISTORY) overshoot.shift();
  const seen = overshoot.filter((o) => o.p99 !== null);
  const top = Math.max(1, ...seen.map((o) => (o.p99 < 0 ? le[le.length - 1] : o.p99)));
  const pts = (k) => seen.map((o) => [1 - (t - o.t) / HISTORY, (o[k] < 0 ? top : o[k]) / top]);
  plot($("overshoot"), [{ cls: "p50", points: pts("p50") }, { cls: "p99", points: pts("p99") }],
    [[0, "-5 min"], [0.5, "-2.5 min"], [1, "now"]], [[0, "0"], [1, fmtMs(top)]]);
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
      el("td", r.drip || ""), el("td", r.fault || ""),
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
  const t = performance.now() / 1000;
  try {
    const res = await fetch("/stats", { cache: "no-store" });
    const s = await res.json();
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
