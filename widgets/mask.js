// MaskView: the LM's top-k tokens with the factors that block each, the allowed
// and blocked mass, an AWRS trace, and a toggle to the vocabulary trie (blocked
// subtrees greyed). Token text is only ever written as text.

function awrsTrace(tr) {
  if (!tr) return null;
  // counts that are counts; the estimator's draw count skips repeats in one geometric jump
  const count = (n) => Number(n || 0).toLocaleString("en-US");
  let line = `AWRS: ${count(tr.n_checks)} checked, ${count(tr.n_rejected)} rejected ` +
    `(the estimate counts ${count(tr.n_draws)} draws, repeats skipped in one jump); ` +
    `log w ${fmt(tr.logw, 3)}`;
  if (tr.exact_logw !== null && tr.exact_logw !== undefined) {
    line += ` (exact log allowed mass ${fmt(tr.exact_logw, 3)})`;
  }
  return h("div", { class: "genlm-awrs" },
    h("div", { class: "genlm-title" }, "AWRS trace (draws in order)"),
    h("div", { class: "genlm-note genlm-awrs-summary" }, line),
    h("div", { class: "genlm-awrs-draws" }, (tr.draws || []).map((d) =>
      h("span", { class: `genlm-tok ${d.accepted ? "genlm-accepted" : "genlm-rejected"}`,
                  title: d.accepted ? "accepted" : "rejected" },
        `${d.accepted ? "\u2713" : "\u2717"} ${d.token}`))));
}

function maskSummary(data) {
  const eos = data.eos || {};
  return `allowed mass ${fmt(data.allowed_mass, 4)}, blocked mass ${fmt(data.blocked_mass, 4)}; ` +
    `${data.n_allowed} of ${data.n_tokens} tokens allowed (EOS ${eos.allowed ? "allowed" : "blocked"}); ` +
    `log Z ${fmt(data.log_z, 3)}`;
}

function maskTable(data) {
  const factors = data.factors || [];
  const cell = (r, f) => {
    if (r.blocked_by.includes(f.name)) return h("td", { class: "genlm-blocks" }, "\u2717 blocks");
    if (f.boolean) return h("td", { class: "genlm-ok" }, "\u2713");
    return h("td", { class: "genlm-num" }, fmt(r.weights[f.name], 2));
  };
  const rows = (data.rows || []).map((r) =>
    h("tr", { class: r.allowed ? "genlm-allowed" : "genlm-blocked", "data-index": r.index },
      h("td", { class: "genlm-num" }, r.rank + 1),
      h("td", {}, h("span", { class: "genlm-tok" }, r.token),
        r.extra ? h("span", { class: "genlm-badge" }, "allowed, outside top k") : null),
      h("td", {}, bar(r.prob, 80), h("span", { class: "genlm-num" }, fmt(r.prob, 4))),
      factors.map((f) => cell(r, f)),
      h("td", {}, r.blocked_by.length ? r.blocked_by.join(", ") : "allowed")));
  const headers = ["#", "token", `p (${data.lm || "uniform"})`, ...factors.map((f) => f.name), "blocked by"];
  return h("div", { class: "genlm-mask-table" }, table(headers, rows),
    data.hidden ? h("div", { class: "genlm-note" }, `+${data.hidden} more tokens, p ${fmt(data.hidden_mass, 4)}`) : null);
}

function maskTrie(data, model) {
  const t = data.trie;
  if (!t) return h("div", { class: "genlm-note" }, "no trie (MaskView.of(..., trie=False))");
  const drill = (hex) => model.send({ prefix_hex: hex });
  const prefix = h("input", { type: "text", value: t.prefix || "", "aria-label": "prefix", size: 12 });
  const depth = h("input", { type: "number", min: 0, value: t.depth, "aria-label": "depth" });
  const apply = () => model.send({ prefix_text: prefix.value, depth: Number(depth.value) });
  for (const x of [prefix, depth]) x.addEventListener("keydown", (e) => { if (e.key === "Enter") apply(); });
  const parentHex = t.prefix_hex ? t.prefix_hex.slice(0, -2) : null;
  const kids = [
    h("div", { class: "genlm-note" }, (t.prefix_hex ? `trie under prefix '${t.prefix}', ` : "whole trie, ") +
      `depth ${t.depth}, top ${t.top_k} children per node; blocked subtrees greyed`),
    h("div", { class: "genlm-controls" }, "prefix", prefix, "depth", depth,
      h("button", { class: "genlm-apply", onclick: apply }, "show"),
      h("button", { class: "genlm-up", onclick: () => drill(parentHex || ""), disabled: !t.prefix_hex }, "\u2191 up")),
  ];
  if (t.error) kids.push(h("div", { class: "genlm-error" }, t.error));
  const svg = t.svg ? safeSvg(t.svg) : null;
  if (svg) {
    for (const g of svg.querySelectorAll("g.node")) {
      const title = g.querySelector("title");
      const n = title && (t.nodes || []).find((x) => String(x.id) === title.textContent);
      if (n) {
        g.addEventListener("click", () => drill(n.prefix_hex));
        if (n.blocked) g.classList.add("genlm-blocked");
      }
    }
    kids.push(h("div", { class: "genlm-graph genlm-mask-trie" }, svg));
  } else {
    kids.push(h("div", { class: "genlm-mask-trie" }, trieTree(t.nodes || [], drill)));
  }
  return h("div", {}, kids);
}

function drawMask(data, model, state) {
  const factors = (data.factors || []).map((f) =>
    `${f.name}${f.is_lm ? " (LM)" : ""} blocks ${f.n_blocked} tokens, mass ${fmt(f.blocked_mass, 4)}`).join("; ");
  // No trie computed (MaskView(trie=False)): no toggle to a trie that is not there.
  const hasTrie = Boolean(data.trie);
  const toggle = hasTrie ? h("button", { class: "genlm-toggle", "aria-pressed": state.trie ? "true" : "false",
    onclick: () => { state.trie = !state.trie; state.redraw(); } },
    state.trie ? "show table" : "show trie") : null;
  return h("div", {},
    h("div", { class: "genlm-title" }, `Next-token mask after '${data.context || ""}'`),
    h("div", { class: "genlm-note genlm-mask-summary" }, maskSummary(data)),
    h("div", { class: "genlm-massbar", title: "allowed / blocked mass" }, bar(data.allowed_mass, 240)),
    h("div", { class: "genlm-note" }, factors),
    h("div", { class: "genlm-controls" }, toggle),
    state.trie && hasTrie ? maskTrie(data, model) : maskTable(data),
    awrsTrace(data.awrs));
}

export default {
  render({ model, el }) {
    const state = { trie: false };
    const off = renderInto(el, model, (data) => drawMask(data, model, state), "mask");
    state.redraw = () => {
      try {
        el.replaceChildren(drawMask(model.get("data") || {}, model, state));
      } catch (err) {
        console.error("genlm_lab view failed:", err);
      }
    };
    return off;
  },
};
