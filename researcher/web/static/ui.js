// swarmrl researcher UI: SVG line charts and 2 s polling of curves, metrics and events.
"use strict";
const NS = "http://www.w3.org/2000/svg";
const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"];

function el(name, attrs, text) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

// series: [{label, colour, dash, points: [[x, y], ...]}]
function drawChart(svg, series) {
  const w = +svg.getAttribute("width"), h = +svg.getAttribute("height");
  const pad = {l: 46, r: 8, t: 8, b: 22};
  svg.replaceChildren();
  const all = series.flatMap(s => s.points);
  if (!all.length) { svg.appendChild(el("text", {x: 12, y: 24, fill: "#888"}, "no points yet")); return; }
  let [x0, x1] = [Math.min(...all.map(p => p[0])), Math.max(...all.map(p => p[0]))];
  let [y0, y1] = [Math.min(...all.map(p => p[1])), Math.max(...all.map(p => p[1]))];
  if (x1 === x0) x1 = x0 + 1;
  if (y1 === y0) { y0 -= 0.5; y1 += 0.5; }
  const sx = x => pad.l + (x - x0) / (x1 - x0) * (w - pad.l - pad.r);
  const sy = y => h - pad.b - (y - y0) / (y1 - y0) * (h - pad.t - pad.b);
  svg.appendChild(el("line", {x1: pad.l, y1: h - pad.b, x2: w - pad.r, y2: h - pad.b, stroke: "#999"}));
  svg.appendChild(el("line", {x1: pad.l, y1: pad.t, x2: pad.l, y2: h - pad.b, stroke: "#999"}));
  const label = (x, y, t, anchor) => svg.appendChild(el("text", {x, y, "font-size": 10, fill: "#555", "text-anchor": anchor}, t));
  label(pad.l - 4, sy(y1) + 8, y1.toPrecision(3), "end");
  label(pad.l - 4, sy(y0), y0.toPrecision(3), "end");
  label(pad.l, h - 6, `step ${x0}`, "start");
  label(w - pad.r, h - 6, `${x1}`, "end");
  series.forEach((s, i) => {
    const pts = s.points.map(p => `${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join(" ");
    svg.appendChild(el("polyline", {points: pts, fill: "none", stroke: s.colour, "stroke-width": 1.6,
                                     "stroke-dasharray": s.dash || ""}));
    if (s.label) svg.appendChild(el("text", {x: w - pad.r - 4, y: pad.t + 12 + 12 * i, "font-size": 11,
                                             fill: s.colour, "text-anchor": "end"}, s.label));
  });
}

async function getJSON(url) {
  const response = await fetch(url, {credentials: "same-origin"});
  if (!response.ok) throw new Error(`${url}: ${response.status}`);
  return response.json();
}

function every(ms, fn) { fn(); setInterval(fn, ms); }

function curves(svg) {
  every(2000, async () => {
    try {
      const data = await getJSON(svg.dataset.src);
      const series = [];
      Object.keys(data).sort().forEach((arm, a) => {
        Object.keys(data[arm]).sort().forEach((seed, s) => series.push({
          label: `${arm} s${seed}`, colour: COLOURS[a % COLOURS.length], dash: s ? "4 2" : "",
          points: data[arm][seed]}));
      });
      drawChart(svg, series);
      svg.dataset.points = series.reduce((n, s) => n + s.points.length, 0);
    } catch (e) { /* the next tick retries */ }
  });
}

function metrics(box) {
  every(2000, async () => {
    try {
      const data = await getJSON(box.dataset.src);
      box.querySelectorAll("svg[data-metric]").forEach(svg => {
        drawChart(svg, [{colour: COLOURS[0], points: data[svg.dataset.metric] || []}]);
      });
    } catch (e) { /* the next tick retries */ }
  });
}

// "YYYY-MM-DD HH:MM:SS" in local time, as the server renders the first events
function clock(at) {
  const d = new Date(at * 1000), two = n => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

function events(list) {
  const status = document.getElementById("study-status"), phase = document.getElementById("study-phase");
  every(2000, async () => {
    try {
      const data = await getJSON(`${list.dataset.src}?since=${list.dataset.last}`);
      if (status) { status.textContent = data.status; status.className = `status ${data.status}`; }
      if (phase) phase.textContent = data.phase;
      for (const e of data.events.slice().reverse()) {
        const item = document.createElement("li");
        item.className = `event ${e.kind}`;
        const when = document.createElement("span");
        when.className = "dim"; when.textContent = clock(e.at);
        const b = document.createElement("b"); b.textContent = e.phase;
        const i = document.createElement("i"); i.textContent = e.kind;
        item.append(when, " ", b, " ", i, " ", e.message);
        if (e.reason) { const r = document.createElement("span"); r.className = "reason"; r.textContent = ` — ${e.reason}`; item.append(r); }
        list.prepend(item);
        list.dataset.last = Math.max(+list.dataset.last, e.id);
      }
    } catch (e) { /* the next tick retries */ }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const c = document.getElementById("curves"); if (c) curves(c);
  const m = document.getElementById("metrics"); if (m) metrics(m);
  const ev = document.getElementById("events"); if (ev) events(ev);
});
