// ParticleView: live rows per particle, ESS / log_ml lines, resampling events and their
// draws, the genealogy (steps x particles, lines to ancestors, click for lineage), the
// retained particle of a conditional SMC run, a tempered factor's temperature.

function stateLabel(st) {
  return st === "active" ? "" : st;
}

const REST_NOTE = "log w minus the factor columns and the critic: the proposal's correction " +
  "(each draw's log Z minus the log-probability it was proposed with), the start weight, and " +
  "resampling, which gives every particle the average weight";

const RETAINED_NOTE = "conditional SMC: the retained particle follows a path fixed before the " +
  "run (the last sweep's pick in particle Gibbs) and survives every resampling; the others draw freely";
const DRAWS_SHOWN = 12;

function factorHeader(name, temps) {
  const t = (temps || {})[name];
  return t === undefined || t === null ? `log w ${name}` : `log w ${name} (T ${fmt(t, 2)})`;
}

function temperatureTip(t) {
  const beta = num(t) === Infinity ? 0 : 1 / num(t);
  return `tempered at temperature ${fmt(t, 3)}: each log-weight is multiplied by ` +
    `beta = 1/T = ${fmt(beta, 3)}`;
}

function factorCells(p, names, awrs, temps) {
  // control.SMC: summed log-weight per factor (this step's in the tooltip), critic, last draw, AWRS.
  if (!names.length) return [];
  const last = p.last || {};
  const step = last.factors || {};
  const tip = (n) => (n in step ? `this step: ${fmt(step[n], 3)}` : "no step") +
    ((temps || {})[n] !== undefined && (temps || {})[n] !== null ? `; ${temperatureTip(temps[n])}` : "");
  const cells = names.map((n) => h("td", { class: "genlm-num genlm-factor", "data-factor": n,
    title: tip(n) }, fmt((p.factors || {})[n], 2)));
  cells.push(h("td", { class: "genlm-num" }, fmt(p.critic, 2)));
  cells.push(h("td", { class: "genlm-num genlm-rest", title: REST_NOTE }, fmt(p.rest, 2)));
  cells.push(h("td", {}, last.token === null || last.token === undefined ? "" : tokBox(last.token)));
  const aw = last.awrs;
  if (awrs) cells.push(aw ? h("td", { class: "genlm-awrs-cell genlm-num", title: awrsTip(aw) },
    awrsCounts(aw.n_checks, aw.n_rejected)) : h("td", {}));
  return cells;
}

// AWRS counts that are counts: tokens checked and rejected, not the estimator's draw count
// (draws repeating a rejected token are skipped in one geometric jump, never made).
const count = (n) => Number(n || 0).toLocaleString("en-US");
function awrsCounts(checks, rejected) {
  return `${count(checks)} checked, ${count(rejected)} rejected`;
}

function awrsTip(aw) {
  const shown = aw.rejected || [];
  const more = (aw.n_rejected || 0) - shown.length;
  return `this step AWRS checked ${count(aw.n_checks)} tokens against the constraint and rejected ` +
    `${count(aw.n_rejected)}; its weight estimate counts ${count(aw.n_draws)} i.i.d. draws ` +
    "(repeats of rejected tokens are counted in one geometric jump, not drawn)" +
    (shown.length ? `\nrejected: ${shown.join(", ")}` : "") + (more > 0 ? ` and ${count(more)} more` : "");
}

// A particle's text: cut past TEXT_SHOWN characters, the whole on hover and one click away.
const TEXT_SHOWN = 120;
function textCell(text) {
  text = text || "";
  if (text.length <= TEXT_SHOWN) return h("td", { class: "genlm-text" }, text);
  const more = text.length - TEXT_SHOWN;
  return h("td", { class: "genlm-text" }, h("details", { class: "genlm-more" },
    h("summary", { title: text }, `${text.slice(0, TEXT_SHOWN)}\u2026 `,
      h("span", { class: "genlm-note" }, `(+${count(more)} characters)`)), text));
}

function essRange(data) {
  // The ESS axis from 0 to the number of particles: a small fall is drawn small.
  const finite = (data.ess || []).map(num).filter(Number.isFinite);
  return [0, Math.max(Number(data.n_particles) || 0, ...finite) || 1];
}

function particleRows(data) {
  const names = data.factor_names || [];
  return (data.particles || []).map((p) =>
    h("tr", { class: `genlm-${p.state}`, "data-index": p.index },
      h("td", { class: "genlm-num" }, p.index),
      h("td", {}, p.retained ? h("span", { class: "genlm-badge genlm-retained", title: RETAINED_NOTE },
        "\u25c6 retained") : null,
        stateLabel(p.state) ? h("span", { class: "genlm-badge" }, p.state) : "",
        p.killed ? h("span", { class: "genlm-killed" },
          ` step ${p.killed.step}, by ${p.killed.by}${p.killed.why ? `: ${p.killed.why}` : ""}`) : null),
      h("td", {}, bar(p.weight), h("span", { class: "genlm-num genlm-weight" }, fmt(p.weight))),
      h("td", { class: "genlm-num" }, fmt(p.log_weight, 2)),
      factorCells(p, names, data.awrs_column, data.factor_temperatures),
      textCell(p.text)));
}

function deathsLine(data) {
  if (!(data.factor_names || []).length) return null;
  const d = data.deaths || {};
  const keys = Object.keys(d);
  if (!keys.length) return h("div", { class: "genlm-note genlm-deaths" }, "no particle killed");
  const parts = keys.map((k) => `${k}: ${d[k].length} (step ${d[k].slice(0, 8).join(", ")}${d[k].length > 8 ? ", ..." : ""})`);
  return h("div", { class: "genlm-note genlm-deaths" }, `killed by ${parts.join("; ")}`);
}

function listed(items, more) {
  const shown = items.slice(0, DRAWS_SHOWN).join(", ");
  return items.length > DRAWS_SHOWN ? `${shown}, \u2026 (${items.length - DRAWS_SHOWN} ${more})` : shown;
}

function drawsList(data) {
  // Each resampling: its scheme, the copies each particle got, those dropped, every new parent.
  const draws = data.resamplings || [];
  if (!draws.length) return null;
  const rows = draws.map((d) => {
    const kept = [], dropped = [];
    d.offspring.forEach((c, i) => (c > 0 ? kept.push(`#${i}\u00d7${c}`) : dropped.push(`#${i}`)));
    const parents = d.ancestors.slice(0, 2 * DRAWS_SHOWN).join(" ") +
      (d.ancestors.length > 2 * DRAWS_SHOWN ? " \u2026" : "");
    return h("tr", { "data-step": d.step }, h("td", { class: "genlm-num" }, d.step),
      h("td", {}, d.method || ""), h("td", {}, listed(kept, "more")),
      h("td", {}, dropped.length ? listed(dropped, "more") : "none"),
      h("td", { class: "genlm-num" }, parents));
  });
  const box = h("details", { class: "genlm-draws" },
    h("summary", { class: "genlm-note" }, `resampling draws (${draws.length} resampling` +
      `${draws.length !== 1 ? "s" : ""}: the copies each particle got, those dropped, the parent ` +
      "of each new particle)"),
    table(["step", "scheme", "copies", "dropped", "parents of the new particles"], rows));
  if (draws.length <= 6) box.open = true;
  return box;
}

function retainedLine(data) {
  if (data.retained === null || data.retained === undefined) return null;
  return h("div", { class: "genlm-note genlm-retained-note" },
    `\u25c6 slot ${data.retained}: ${RETAINED_NOTE}.`);
}

function alarmsLine(data) {
  const alarms = data.alarms || [];
  if (!alarms.length) return null;
  return h("div", { class: "genlm-note genlm-alarms", role: "alert" }, "\u26a0 alarms",
    h("ul", {}, ...alarms.map((a) => h("li", { "data-kind": a.kind },
      h("b", {}, `step ${a.step}, ${a.kind}`), `: ${a.text}`))));
}

function genealogy(data) {
  const steps = data.genealogy || [];
  if (steps.length === 0) return null;
  const n = Math.max(...steps.map((st) => st.length));
  const dx = 34, dy = n > 32 ? 10 : 16, left = 30, top = 18;
  const width = left + dx * (steps.length - 1) + 24, height = top + dy * (n - 1) + 26;
  const svg = s("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "genlm-genealogy",
                         role: "img", "aria-label": "genealogy: steps by particles" });
  const X = (t) => left + t * dx, Y = (i) => top + i * dy;
  svg.append(s("text", { x: 0, y: 10, "font-size": 10 }, "step \u2192   particles \u2193"));
  const labels = data.steps || steps.map((_, t) => t);
  const every = Math.max(1, Math.ceil(steps.length / 12));
  for (let t = 0; t < steps.length; t += every) {
    svg.append(s("text", { x: X(t), y: height - 2, "font-size": 9, "text-anchor": "middle",
                           class: "genlm-steplabel" }, labels[t]));
  }
  const edges = [], nodes = [];
  steps.forEach((st, t) => st.forEach((node, i) => {
    if (t > 0 && node.parent !== null && node.parent !== undefined) {
      const e = s("line", { x1: X(t - 1), y1: Y(node.parent), x2: X(t), y2: Y(i),
                            class: "genlm-edge", "data-step": t, "data-index": i });
      edges.push(e);
      svg.append(e);
    }
  }));
  const highlight = (t0, i0) => {
    const on = new Set();
    for (let t = t0, i = i0; t >= 0 && i !== null && i !== undefined; t--) {
      on.add(`${t}:${i}`);
      i = steps[t][i].parent;
    }
    for (const e of edges) {
      const key = `${e.getAttribute("data-step")}:${e.getAttribute("data-index")}`;
      e.classList.toggle("genlm-hl", on.has(key));
    }
    for (const c of nodes) {
      const key = `${c.getAttribute("data-step")}:${c.getAttribute("data-index")}`;
      c.classList.toggle("genlm-hl", on.has(key));
    }
  };
  steps.forEach((st, t) => st.forEach((node, i) => {
    const w = Math.max(0, num(node.weight) || 0);
    const r = 1.5 + 4 * Math.sqrt(w);
    if (node.retained) {  // a ring around the retained particle's dot
      svg.append(s("circle", { cx: X(t), cy: Y(i), r: (r + 2.5).toFixed(2),
                               class: "genlm-retained-ring", "data-step": t, "data-index": i }));
    }
    const c = s("circle", {
      cx: X(t), cy: Y(i), r: r.toFixed(2),
      class: `genlm-node genlm-${node.state}`, "data-step": t, "data-index": i,
      onclick: () => highlight(t, i),
    }, s("title", {}, `step ${labels[t]}, slot ${i} (${node.state})\nweight ${fmt(node.weight)} ` +
                       `(log ${fmt(node.log_weight, 2)})\nincrement ${fmt(node.increment, 3)}\n` +
                       (node.retained ? "retained particle\n" : "") +
                       (node.children === null || node.children === undefined ? "" :
                         `resampled: ${node.children} cop${node.children === 1 ? "y" : "ies"}\n`) +
                       (node.token === null || node.token === undefined ? "" : `token ${node.token}\n`) +
                       (node.killed_by ? `killed by ${node.killed_by}\n` : "") +
                       (node.awrs ? `${node.awrs}\n` : "") + node.text));
    nodes.push(c);
    svg.append(c);
  }));
  return svg;
}

// A conditional run's log_ml is not an estimate of log Z (the retained path is not drawn).
const CONDITIONAL_ML = "conditional: not an estimate of log Z";

function drawParticles(data) {
  const ps = data.particles || [];
  const kept = data.n_kept;
  const count = kept === null || kept === undefined
    ? `${ps.length} particles` : `${ps.length} candidates, ${kept} kept`;
  const conditional = data.retained !== null && data.retained !== undefined;
  const head = `${conditional ? "conditional SMC" : "SMC"} ${data.status}: step ${data.step}, ` +
    `${count}, ESS ${fmt(data.final_ess ?? (data.ess && data.ess[data.ess.length - 1]), 2)}, ` +
    `log_ml ${fmt(data.final_log_ml ?? (data.log_ml && data.log_ml[data.log_ml.length - 1]), 3)}` +
    (conditional ? ` (${CONDITIONAL_ML})` : "");
  const scheme = data.resampling_method ? ` (${data.resampling_method})` : "";
  const resampled = (data.resampled || []).length
    ? `resampled${scheme} at step ${data.resampled.join(", ")}` : "no resampling yet";
  const tree = genealogy(data);
  return h("div", {},
    h("div", { class: "genlm-title genlm-status" }, head),
    h("div", { class: "genlm-cols" },
      lineChart([{ name: "ESS", values: data.ess || [] }], { title: "ESS over steps", yRange: essRange(data) }),
      lineChart([{ name: "log_ml", values: data.log_ml || [], cls: "genlm-line2" }],
                { title: conditional ? `log_ml over steps (${CONDITIONAL_ML})` : "log_ml estimate over steps" })),
    h("div", { class: "genlm-note genlm-resampled" }, resampled),
    drawsList(data),
    retainedLine(data),
    alarmsLine(data),
    data.held_note ? h("div", { class: "genlm-note genlm-held" }, data.held_note) : null,
    deathsLine(data),
    table(["#", "state", "weight", "log w",
           ...((data.factor_names || []).length
             ? [...data.factor_names.map((n) => factorHeader(n, data.factor_temperatures)),
                "critic", "rest", "last token",
                ...(data.awrs_column ? ["AWRS"] : [])] : []),
           "text"], particleRows(data)),
    (data.factor_names || []).length
      ? h("div", { class: "genlm-note genlm-rest-note" }, h("b", {}, "rest"), `: ${REST_NOTE}.`) : null,
    tree ? h("div", { class: "genlm-title" }, "Genealogy (click a particle for its lineage)") : null,
    tree);
}

export default {
  render({ model, el }) {
    return renderInto(el, model, drawParticles, "particles");
  },
};
