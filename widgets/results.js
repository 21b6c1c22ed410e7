// ResultsView: summary per method x domain, accuracy vs runtime, per-run rows that open a run.
function safeHtml(markup) {
  // Kernel-rendered particle table: parsed as inert HTML, scripts and handlers dropped.
  const doc = new DOMParser().parseFromString(markup, "text/html");
  for (const bad of doc.querySelectorAll("script, iframe, object, embed, link")) bad.remove();
  for (const node of doc.body.querySelectorAll("*")) {
    for (const a of Array.from(node.attributes)) {
      if (a.name.startsWith("on") || a.name === "src" || (a.name.endsWith("href") && !a.value.startsWith("#"))) node.removeAttribute(a.name);
    }
  }
  const box = h("div", { class: "genlm-selected" });
  box.append(...Array.from(doc.body.childNodes).map((n) => document.importNode(n, true)));
  return box;
}

function scatter(summary) {
  const W = 360, H = 200, L = 40, B = 28, T = 14, R = 90;
  const svg = s("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img",
                         "aria-label": "accuracy vs runtime", class: "genlm-chart genlm-scatter" });
  svg.append(s("path", { class: "genlm-axis", d: `M${L},${T} V${H - B} H${W - R}` }));
  svg.append(s("text", { x: L, y: H - 4, "font-size": 10 }, "mean runtime per instance (s)"));
  const xs = summary.map((r) => num(r.runtime_mean)).filter(Number.isFinite);
  if (!xs.length) return svg;
  const hi = Math.max(...xs) * 1.1 || 1;
  const X = (x) => L + (x / hi) * (W - L - R);
  const Y = (y) => H - B - y * (H - B - T);
  for (const r of summary) {
    const acc = num(r.weighted_accuracy), x = num(r.runtime_mean);
    if (!Number.isFinite(acc) || !Number.isFinite(x)) continue;
    if (r.ci_low !== null) svg.append(s("path", { class: "genlm-line", d: `M${X(x)},${Y(num(r.ci_low))} V${Y(num(r.ci_high))}` }));
    svg.append(s("circle", { class: "genlm-point", cx: X(x), cy: Y(acc), r: 4 }, s("title", {}, `${r.method} / ${r.domain}: ${fmt(acc)}`)));
    svg.append(s("text", { x: X(x) + 6, y: Y(acc) + 3, "font-size": 9 }, `${r.method} / ${r.domain}`));
  }
  return svg;
}

function drawResults(data, model) {
  const summary = data.summary || [];
  const sumRows = summary.map((r) => h("tr", {},
    h("td", {}, r.method), h("td", {}, r.domain),
    h("td", {}, bar(r.weighted_accuracy, 80), " ", h("span", { class: "genlm-num" }, fmt(r.weighted_accuracy))),
    h("td", { class: "genlm-num" }, r.ci_low === null ? "" : `[${fmt(r.ci_low)}, ${fmt(r.ci_high)}]`),
    h("td", { class: "genlm-num" }, r.n_instances), h("td", { class: "genlm-num" }, r.n_errors),
    h("td", { class: "genlm-num" }, fmt(r.runtime_mean, 2)), h("td", { class: "genlm-num" }, fmt(r.lm_requests_mean, 1))));
  const runRows = (data.runs || []).map((r) => {
    const open = r.has_record ? () => { model.set("selected_run", -1); model.set("selected_run", r.run_id); model.save_changes(); } : null;
    return h("tr", { "data-run-id": r.run_id, class: open ? "genlm-clickable genlm-run-row" : "genlm-run-row",
                     title: open ? "open this run's particles" : null, onclick: open },
      h("td", {}, `#${r.run_id ?? ""}`), h("td", {}, r.method), h("td", {}, r.domain), h("td", {}, r.instance_id),
      h("td", { class: "genlm-num" }, r.replicate), h("td", { class: "genlm-num" }, fmt(r.weighted_accuracy)),
      h("td", { class: "genlm-num" }, fmt(r.runtime_seconds, 2)), h("td", { class: "genlm-num" }, fmt(r.lm_requests)),
      h("td", {}, r.status || "", " ", h("span", { class: "genlm-note" }, r.status === "ok" ? "" : (r.error || ""))));
  });
  const sel = data.selected;
  return h("div", {},
    h("div", { class: "genlm-title" }, `Results: ${data.n_runs || 0} runs`),
    table(["method", "domain", "weighted accuracy", "95% CI", "instances", "errors", "runtime (s)", "LM requests"], sumRows),
    scatter(summary),
    table(["run", "method", "domain", "instance", "rep", "weighted acc.", "runtime (s)", "LM requests", "status"], runRows),
    sel ? [h("div", { class: "genlm-title" }, `Run #${sel.run_id}`), safeHtml(sel.html)] : null);
}

export default {
  render({ model, el }) {
    return renderInto(el, model, drawResults, "results");
  },
};
