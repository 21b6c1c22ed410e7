// Shared helpers of the genlm_lab views. Python prepends this file to each view's
// module (no build step). Data is only ever written with textContent or SVG
// attributes: token text is never parsed as markup.

const SVG_NS = "http://www.w3.org/2000/svg";

function num(x) {
  // Non-finite floats travel as strings ("-Infinity", "NaN").
  return typeof x === "string" ? Number(x) : x;
}

function fmt(x, digits = 3) {
  x = num(x);
  if (x === null || x === undefined) return "";
  if (Number.isNaN(x)) return "NaN";
  if (x === -Infinity) return "\u2212\u221e";
  if (x === Infinity) return "\u221e";
  if (Number.isInteger(x)) return String(x);
  const a = Math.abs(x);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return x.toExponential(2);
  return x.toFixed(digits);
}

function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "style") node.style.cssText = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function s(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function bar(fraction, width = 120) {
  // Bar length carries the value, next to the number (colour is never alone).
  const f = Math.max(0, Math.min(1, num(fraction) || 0));
  return h("span", { class: "genlm-barbox", style: `width:${width}px` },
    h("span", { class: "genlm-bar", style: `width:${(f * 100).toFixed(1)}%` }));
}

function tokBox(text, partial = false) {
  return h("span", { class: partial ? "genlm-tok genlm-partial" : "genlm-tok",
                     title: partial ? "partial token" : "token" }, text);
}

function table(headers, rows) {
  return h("table", { class: "genlm-table" },
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", {}, x)))),
    h("tbody", {}, rows));
}

function lineChart(series, { width = 320, height = 110, title = "", yRange = null } = {}) {
  // series: [{name, values, cls}] with values aligned on the x axis; yRange [lo, hi] widens the axis.
  const pad = 28;
  const all = series.flatMap((x) => x.values.map(num)).filter(Number.isFinite);
  const svg = s("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
                         "aria-label": title, class: "genlm-chart" });
  svg.append(s("text", { x: pad, y: 11, "font-size": 11 }, title));
  svg.append(s("path", { class: "genlm-axis", d: `M${pad},14 V${height - pad / 2} H${width - 4}` }));
  if (all.length === 0) return svg;
  let lo = Math.min(...all), hi = Math.max(...all);
  if (yRange) { lo = Math.min(lo, yRange[0]); hi = Math.max(hi, yRange[1]); }
  if (hi - lo < 1e-12) { lo -= 1; hi += 1; }
  const n = Math.max(...series.map((x) => x.values.length));
  const X = (i) => pad + (n <= 1 ? 0 : (i * (width - pad - 8)) / (n - 1));
  const Y = (v) => 16 + ((hi - v) * (height - pad / 2 - 18)) / (hi - lo);
  svg.append(s("text", { x: 2, y: 22, "font-size": 9 }, fmt(hi, 2)));
  svg.append(s("text", { x: 2, y: height - pad / 2, "font-size": 9 }, fmt(lo, 2)));
  for (const ser of series) {
    const pts = ser.values.map((v, i) => [X(i), num(v)]).filter((p) => Number.isFinite(p[1]));
    if (pts.length === 0) continue;
    const d = pts.map((p, i) => `${i ? "L" : "M"}${p[0].toFixed(1)},${Y(p[1]).toFixed(1)}`).join(" ");
    svg.append(s("path", { class: ser.cls || "genlm-line", d }, s("title", {}, ser.name)));
  }
  return svg;
}

// Trie drawing shared by TrieView and MaskView.
function safeSvg(markup) {
  // Graphviz output, parsed as SVG (never as HTML); scripts and handlers dropped.
  const doc = new DOMParser().parseFromString(markup, "image/svg+xml");
  const svg = doc.documentElement;
  if (!svg || svg.nodeName !== "svg") return null;
  for (const bad of svg.querySelectorAll("script, foreignObject")) bad.remove();
  for (const node of svg.querySelectorAll("*")) {
    for (const a of Array.from(node.attributes)) {
      if (a.name.startsWith("on") || (a.name.endsWith("href") && !a.value.startsWith("#"))) node.removeAttribute(a.name);
    }
  }
  return document.importNode(svg, true);
}

function trieTree(nodes, drill) {
  const kids = new Map();
  for (const n of nodes) {
    const key = n.parent === null ? "root" : n.parent;
    if (!kids.has(key)) kids.set(key, []);
    kids.get(key).push(n);
  }
  const item = (n) => h("li", { "data-prefix": n.prefix_hex, class: n.blocked ? "genlm-blocked" : null },
    n.prob === null ? null : [bar(n.prob, 60), h("span", { class: "genlm-num" }, fmt(n.prob)), " "],
    n.edge ? [h("code", {}, n.edge), " \u2192 "] : null,
    h("code", { class: "genlm-clickable", title: "drill into this prefix", onclick: () => drill(n.prefix_hex) }, n.label),
    n.blocked ? h("span", { class: "genlm-badge" }, "blocked") : null,
    n.hidden ? h("span", { class: "genlm-note" }, ` +${n.hidden} more`) : null,
    kids.has(n.id) ? h("ul", {}, kids.get(n.id).map(item)) : null);
  return h("div", { class: "genlm-trie" }, h("ul", {}, (kids.get("root") || []).map(item)));
}

function renderInto(el, model, draw, kind) {
  // Redraw the whole view from the synced data on every change (data is small).
  el.classList.add("genlm-view", "genlm-live", `genlm-${kind}`);
  const redraw = () => {
    const data = model.get("data") || {};
    try {
      el.replaceChildren(draw(data, model));
    } catch (err) {
      console.error("genlm_lab view failed:", err);
      el.replaceChildren(h("div", { class: "genlm-error" }, `view failed: ${err}`));
    }
  };
  model.on("change:data", redraw);
  redraw();
  return () => model.off("change:data", redraw);
}
