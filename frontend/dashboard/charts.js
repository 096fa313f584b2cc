// Line charts for the operator view, drawn as plain SVG (no library, no
// inline style: colours are attributes and classes of style.css).
// lineChart(el, {from, stepMs, lines: [{name, values, cls}]}, unit)
// replaces el's content with one chart: a line per series over the
// minutes (a dot for a lone value), the scale and the time span labelled,
// and a legend that says each line's latest value.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";

function svgEl(name, attrs) {
  const el = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  return el;
}

function lineChart(el, chart, unit) {
  const W = 320, H = 120, PAD = { l: 34, r: 6, t: 8, b: 18 };
  const lines = chart.lines.filter((l) => l.values && l.values.length);
  const n = Math.max(1, ...lines.map((l) => l.values.length));
  let top = 0;
  for (const l of lines) for (const v of l.values) if (v !== null && v > top) top = v;
  top = niceTop(top);
  const x = (i) => PAD.l + (n === 1 ? 0 : (i * (W - PAD.l - PAD.r)) / (n - 1));
  const y = (v) => H - PAD.b - (v / top) * (H - PAD.t - PAD.b);
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img" });
  svg.append(svgEl("line", { x1: PAD.l, y1: y(0), x2: W - PAD.r, y2: y(0), class: "axis" }));
  svg.append(svgEl("line", { x1: PAD.l, y1: y(top), x2: W - PAD.r, y2: y(top), class: "grid" }));
  const label = (text, attrs) => { const t = svgEl("text", attrs); t.textContent = text; svg.append(t); };
  label(fmt(top), { x: PAD.l - 3, y: y(top) + 4, class: "tick", "text-anchor": "end" });
  label("0", { x: PAD.l - 3, y: y(0) + 4, class: "tick", "text-anchor": "end" });
  const start = new Date(chart.from), end = new Date(chart.from + (n - 1) * chart.stepMs);
  label(start.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }), { x: PAD.l, y: H - 4, class: "tick" });
  label(end.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }), { x: W - PAD.r, y: H - 4, class: "tick", "text-anchor": "end" });
  const legend = document.createElement("ul");
  legend.className = "legend";
  const summary = [];
  lines.forEach((l, k) => {
    const cls = "line s" + (l.cls !== undefined ? l.cls : k);
    let d = "";
    l.values.forEach((v, i) => {
      if (v === null || v === undefined) return;
      d += (d && l.values[i - 1] !== null && l.values[i - 1] !== undefined ? "L" : "M") + x(i).toFixed(1) + " " + y(v).toFixed(1);
    });
    if (d) svg.append(svgEl("path", { d, class: cls, "data-series": l.name }));
    // A value with no neighbour to join is a dot (a minute among minutes with none).
    const has = (i) => l.values[i] !== null && l.values[i] !== undefined;
    l.values.forEach((v, i) => {
      if (has(i) && !has(i - 1) && !has(i + 1)) svg.append(svgEl("circle", { cx: x(i).toFixed(1), cy: y(v).toFixed(1), r: 2.5, class: "dot " + cls }));
    });
    const latest = [...l.values].reverse().find((v) => v !== null && v !== undefined);
    const li = document.createElement("li");
    li.className = cls;
    li.textContent = l.name + " " + (latest === undefined ? "–" : fmt(latest) + (unit || ""));
    legend.append(li);
    summary.push(li.textContent);
  });
  svg.setAttribute("aria-label", (chart.title || "") + ": " + summary.join(", "));
  el.replaceChildren(svg, legend);
}

// niceTop rounds a chart's largest value up to 1, 2 or 5 times a power of ten.
function niceTop(v) {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

function fmt(v) {
  if (v >= 10000) return Math.round(v / 1000) + "k";
  return Number.isInteger(v) ? String(v) : v.toFixed(2);
}
