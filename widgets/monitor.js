// BackendMonitor: a small table of an AsyncLM's counters.
function drawMonitor(data) {
  const rows = (data.rows || []).map((r) =>
    h("tr", {}, h("td", {}, r.name), h("td", { class: "genlm-num" }, fmt(r.value, 2))));
  return h("div", {},
    h("div", { class: "genlm-title" }, `Backend ${data.name || ""}`),
    table(["counter", "value"], rows));
}

export default {
  render({ model, el }) {
    return renderInto(el, model, drawMonitor, "monitor");
  },
};
