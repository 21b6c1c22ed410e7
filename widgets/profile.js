// ProfileView: seconds per step, stacked by component, and a table of the whole run.
const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                 "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

function profileBars(data) {
  const stacks = data.stacks || [];
  if (!stacks.length) return null;
  const height = 140;
  const top = Math.max(...stacks.map((st) => st.reduce((a, b) => a + b, 0))) || 1;
  const dx = Math.max(3, Math.min(24, Math.floor(560 / stacks.length)));
  const left = 40, width = left + dx * stacks.length + 10;
  const svg = s("svg", { width, height: height + 30, class: "genlm-profile-bars", role: "img",
                         "aria-label": "seconds per step, stacked by component" });
  svg.append(s("text", { x: 0, y: 10, "font-size": 10 }, `${fmt(top, 3)} s`));
  svg.append(s("text", { x: 0, y: height + 24, "font-size": 10 }, "step \u2192"));
  stacks.forEach((stack, t) => {
    let y = height + 10;
    stack.forEach((sec, i) => {
      const hgt = (height * sec) / top;
      if (!(hgt > 0)) return;
      y -= hgt;
      const name = data.components[i];
      svg.append(s("rect", { x: left + t * dx, y: y.toFixed(2), width: dx - 1, height: hgt.toFixed(2),
                             fill: PALETTE[i % PALETTE.length], "data-step": data.steps[t],
                             "data-component": name },
                   s("title", {}, `step ${data.steps[t]}: ${name} ${fmt(sec, 4)} s`)));
    });
  });
  return svg;
}

function drawProfile(data) {
  const rows = data.table || [];
  if (!rows.length) {
    // Live and empty means no step has come yet; only a finished run without rows was unprofiled.
    return h("div", { class: "genlm-note" }, data.done
      ? "no profile: this run was not profiled (profile=True)" : "profile: no step yet");
  }
  const counters = Object.entries(data.counters || {}).map(([k, v]) => `${k} ${v}`).join(", ");
  const head = `Profile${data.done ? "" : " (running)"}: ${fmt(data.total, 3)} s over ` +
    `${(data.steps || []).length} steps${counters ? `; ${counters}` : ""}`;
  const legend = h("div", { class: "genlm-profile-legend" }, ...(data.components || []).map((c, i) =>
    h("span", {}, s("svg", { width: 10, height: 10 },
      s("rect", { width: 10, height: 10, fill: PALETTE[i % PALETTE.length] })), ` ${c} `)));
  const body = rows.map((r) => h("tr", { "data-component": r.component },
    h("td", {}, r.component), h("td", { class: "genlm-num" }, r.calls),
    h("td", { class: "genlm-num" }, fmt(r.seconds, 4)),
    h("td", {}, bar(r.share), h("span", { class: "genlm-num" }, `${(100 * r.share).toFixed(1)}%`))));
  return h("div", {},
    h("div", { class: "genlm-title genlm-status" }, head),
    profileBars(data), legend,
    table(["component", "calls", "seconds", "share"], body));
}

export default {
  render({ model, el }) {
    return renderInto(el, model, drawProfile, "profile");
  },
};
