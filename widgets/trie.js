// TrieView: controls (context, prefix, depth, top_k) and click-to-drill on the
// graphviz SVG (or the HTML tree when `dot` is missing).

function hexToLabel(nodes, hex) {
  const n = nodes.find((x) => x.prefix_hex === hex);
  return n ? n.label : "";
}

function drawTrie(data, model) {
  const nodes = data.nodes || [];
  const drill = (hex) => model.send({ prefix_hex: hex });
  const prefix = h("input", { type: "text", value: data.prefix || "", "aria-label": "prefix", size: 12 });
  const depth = h("input", { type: "number", min: 0, value: data.depth, "aria-label": "depth" });
  const topk = h("input", { type: "number", min: 1, value: data.top_k, "aria-label": "top k" });
  const context = data.live_context
    ? h("input", { type: "text", value: data.context || "", "aria-label": "context", size: 24 }) : null;
  const apply = () => {
    const msg = { prefix_text: prefix.value, depth: Number(depth.value), top_k: Number(topk.value) };
    if (context) msg.context = context.value;
    model.send(msg);
  };
  const onEnter = (e) => { if (e.key === "Enter") apply(); };
  for (const x of [prefix, depth, topk, context]) if (x) x.addEventListener("keydown", onEnter);
  const parentHex = data.prefix_hex ? data.prefix_hex.slice(0, -2) : null;
  const controls = h("div", { class: "genlm-controls" },
    context ? ["context", context] : null, "prefix", prefix, "depth", depth, "top k", topk,
    h("button", { class: "genlm-apply", onclick: apply }, "show"),
    h("button", { class: "genlm-up", onclick: () => drill(parentHex || ""), disabled: !data.prefix_hex }, "\u2191 up"));
  const kids = [
    h("div", { class: "genlm-title" }, data.prefix_hex ? `Trie under prefix '${data.prefix}'` : "Trie"),
    h("div", { class: "genlm-note" }, `depth ${data.depth}, top ${data.top_k} children per node` +
      (data.context === null || data.context === undefined ? "" : `; masses given context '${data.context}'`)),
    controls,
  ];
  if (data.error) kids.push(h("div", { class: "genlm-error" }, data.error));
  if (data.message) kids.push(h("div", { class: "genlm-note genlm-nodot" }, data.message));
  const svg = data.svg ? safeSvg(data.svg) : null;
  if (svg) {
    for (const g of svg.querySelectorAll("g.node")) {
      const title = g.querySelector("title");
      const n = title && nodes.find((x) => String(x.id) === title.textContent);
      if (n) g.addEventListener("click", () => drill(n.prefix_hex));
    }
    kids.push(h("div", { class: "genlm-graph" }, svg));
  } else {
    kids.push(trieTree(nodes, drill));
  }
  return h("div", {}, kids);
}

export default {
  render({ model, el }) {
    return renderInto(el, model, drawTrie, "trie");
  },
};
