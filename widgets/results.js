// ResultsView: summary per model x method x domain (pick two rows to compare), accuracy vs cost, runs that open.
function safeHtml(markup, cls) {
  // Kernel-rendered particle table: parsed as inert HTML, scripts and handlers dropped.
  const doc = new DOMParser().parseFromString(markup, "text/html");
  for (const bad of doc.querySelectorAll("script, iframe, object, embed, link")) bad.remove();
  for (const node of doc.body.querySelectorAll("*")) {
    for (const a of Array.from(node.attributes)) {
      if (a.name.startsWith("on") || a.name === "src" || (a.name.endsWith("href") && !a.value.startsWith("#"))) node.removeAttribute(a.name);
    }
  }
  const box = h("div", { class: cls || "genlm-kernel-html" });
  box.append(...Array.from(doc.body.childNodes).map((n) => document.importNode(n, true)));
  return box;
}

function accuracy(x) {
  // As the static report writes it (results_html._accuracy): three decimals, so that an exact 1
  // and float noise just below it read alike ("[1.000, 1.000]", not "[1.000, 1]").
  x = num(x);
  return x === null || x === undefined || Number.isNaN(x) ? "" : x.toFixed(3);
}

function drawResults(data, model) {
  const summary = data.summary || [];
  const picked = model.get("compare_rows") || [];
  const pick = (i, ev) => {
    // Two rows picked: the kernel compares them (paired by instance) and pushes the result.
    const was = model.get("compare_rows") || [];
    const now = was.includes(i) ? was.filter((j) => j !== i) : [...was, i].slice(-2);
    model.set("compare_rows", now);
    model.save_changes();
    for (const tr of ev.currentTarget.parentNode.children) {
      tr.style.background = now.includes(Number(tr.dataset.row)) ? "var(--jp-brand-color3, #bbdefb)" : "";
    }
  };
  const sumRows = summary.map((r, i) => h("tr", {
      "data-row": i, class: picked.includes(i) ? "genlm-clickable genlm-picked" : "genlm-clickable",
      style: picked.includes(i) ? "background: var(--jp-brand-color3, #bbdefb)" : null,
      title: "pick two rows to compare them", onclick: (ev) => pick(i, ev) },
    h("td", {}, r.model || ""), h("td", {}, r.method), h("td", {}, r.domain_label || r.domain),
    h("td", {}, bar(r.weighted_accuracy, 80), " ", h("span", { class: "genlm-num" }, accuracy(r.weighted_accuracy))),
    h("td", { class: "genlm-num", title: r.ci_tip || null },
      r.ci_low === null ? "" : `[${accuracy(r.ci_low)}, ${accuracy(r.ci_high)}]`),
    h("td", { class: "genlm-num" }, r.n_instances), h("td", { class: "genlm-num" }, r.n_errors),
    h("td", { class: "genlm-num" }, r.n_unfinished ?? 0),
    h("td", { class: "genlm-num", title: r.wall_seconds === null || r.wall_seconds === undefined
      ? "wall time not known (runs that never reached a store)"
      : `${fmt(r.wall_seconds, 3)} s of wall time over ${r.n_runs} run${r.n_runs === 1 ? "" : "s"}` },
      fmt(r.wall_per_run, 3)), h("td", { class: "genlm-num" }, fmt(r.runtime_mean, 3)),
    h("td", { class: "genlm-num" }, fmt(r.lm_requests_mean, 3))));
  const runRows = (data.runs || []).map((r) => {
    const open = r.has_record ? () => { model.set("selected_run", -1); model.set("selected_run", r.run_id); model.save_changes(); } : null;
    return h("tr", { "data-run-id": r.run_id, class: open ? "genlm-clickable genlm-run-row" : "genlm-run-row",
                     title: open ? "open this run's particles" : null, onclick: open },
      h("td", {}, `#${r.run_id ?? ""}`), h("td", {}, r.model || ""), h("td", {}, r.method), h("td", {}, r.domain),
      h("td", {}, r.instance_id), h("td", { class: "genlm-text" }, r.instance || ""),
      h("td", { class: "genlm-num" }, r.replicate), h("td", { class: "genlm-num" }, accuracy(r.weighted_accuracy)),
      h("td", { class: "genlm-num" }, fmt(r.runtime_seconds, 2)), h("td", { class: "genlm-num" }, fmt(r.lm_requests)),
      h("td", {}, r.status || "", " ", h("span", { class: "genlm-note" }, r.status === "error" ? (r.error || "") : "")));
  });
  const sel = data.selected, cmp = data.comparison;
  return h("div", {},
    h("div", { class: "genlm-title" }, `Results: ${data.n_runs || 0} run${data.n_runs === 1 ? "" : "s"}`),
    table(["model", "method", "domain", "weighted accuracy", "95% CI", "instances", "errors", "unfinished",
           "wall time per run (s)", "latency per run (s)", "LM requests per run"], sumRows),
    data.ci_note ? h("div", { class: "genlm-note genlm-ci-note" }, data.ci_note) : null,
    data.cost_note ? h("div", { class: "genlm-note genlm-cost-note" }, data.cost_note) : null,
    h("div", { class: "genlm-note" }, "click two rows to compare them, paired by instance"),
    cmp ? [h("div", { class: "genlm-title" }, "Comparison"), safeHtml(cmp.html)] : null,
    safeHtml(data.scatter_svg || ""),
    table(["run", "model", "method", "domain", "instance", "content", "rep", "weighted acc.", "latency (s)", "LM requests", "status"], runRows),
    sel ? [h("div", { class: "genlm-title" }, sel.title || `Run #${sel.run_id}`), safeHtml(sel.html, "genlm-selected")] : null);
}

export default {
  render({ model, el }) {
    return renderInto(el, model, drawResults, "results");
  },
};
