// BeamView / BeamDebugger: controls send actions to the kernel; the kernel pushes data.

function beamControls(model, data) {
  const nInput = h("input", { type: "number", min: 1, value: 5, "aria-label": "bytes per step" });
  const send = (action, n = 1) => model.send({ action, n });
  const atEnd = data.position >= data.n_bytes;
  return h("div", { class: "genlm-controls" },
    h("button", { class: "genlm-back", onclick: () => send("back"), disabled: data.position <= 0 }, "\u25c0 back"),
    h("button", { class: "genlm-step", onclick: () => send("step"), disabled: atEnd }, "step \u25b6"),
    h("button", { class: "genlm-stepn", onclick: () => send("step", Number(nInput.value) || 1), disabled: atEnd }, "step N"),
    nInput,
    h("button", { class: "genlm-run", onclick: () => send("run"), disabled: atEnd }, "run to end"));
}

function beamAlarms(data) {
  const alarms = data.alarms || [];
  if (!alarms.length) {
    return h("div", { class: "genlm-note genlm-no-alarms" }, `no alarms up to position ${data.position || 0}`);
  }
  return h("div", { class: "genlm-note genlm-alarms", role: "alert" }, "\u26a0 alarms",
    h("ul", {}, ...alarms.map((a) => h("li", { "data-kind": a.kind },
      h("b", {}, `position ${a.step}, ${a.kind}`), `: ${a.text}`))));
}

// The text as UTF-8 characters (beam_data's "chars"): those read in bold, bytes on hover.
function beamChar(c, pos) {
  const title = c.bytes !== c.text ? { title: c.bytes } : {};
  if (c.end <= pos) return h("b", title, c.text);
  if (c.start < pos) {
    return h("b", { class: "genlm-partial", title: `${c.bytes}: ${pos - c.start} of its ${c.end - c.start} bytes read` }, c.text);
  }
  return h("span", title, c.text);
}

function beamBand(data) {
  const low = data.logZ || [], high = data.logZ_upper || low;
  if (!low.length) return null;
  const last = low.length - 1;
  const width = Number.isFinite(low[last]) ? high[last] - low[last] : Infinity;
  return h("div", { class: "genlm-note genlm-band" },
    "certified band: the exact logZ lies between logZ (solid) and its upper bound (dashed), " +
    `which adds the mass the beam pruned; width ${fmt(width)} nats at position ${last}`);
}

function drawBeam(data, model) {
  const pos = data.position || 0, chars = data.chars || [], st = data.step;
  const kids = [
    h("div", { class: "genlm-title genlm-status" }, `Byte beam: ${pos} / ${data.n_bytes} bytes read`),
    beamControls(model, data),
    h("div", { class: "genlm-text genlm-progress" },
      chars.filter((c) => c.start < pos).map((c) => beamChar(c, pos)),
      h("span", { class: "genlm-note" }, chars.filter((c) => c.start >= pos).map((c) => beamChar(c, pos)))),
  ];
  if (data.error) kids.push(h("div", { class: "genlm-error" }, data.error));
  kids.push(beamAlarms(data));
  if (!st) return h("div", {}, kids);
  kids.push(h("div", { class: "genlm-note" },
    `${st.byte === null ? "initial beam" : `after byte ${st.byte}`}: logZ ${fmt(st.logZ)}, ` +
    `${st.lm_calls} LM calls this step, ${st.candidates.length} candidates` +
    (st.skipped ? `, ${st.skipped} extensions skipped` : "")));
  const rows = st.candidates.map((c) =>
    h("tr", { class: `genlm-${c.status}` },
      h("td", {}, c.tokens.map((t) => tokBox(t)), tokBox(c.partial, true)),
      h("td", { class: "genlm-num" }, fmt(c.log_weight)),
      h("td", {}, bar(c.share), h("span", { class: "genlm-num" }, fmt(c.share))),
      h("td", {}, h("span", { class: "genlm-badge" }, c.status),
        c.terminated ? h("span", { class: "genlm-badge" }, "EOS") : null)));
  kids.push(table(["tokens | partial", "log weight", "share of logZ", "status"], rows));
  for (const e of st.healing) kids.push(h("div", { class: "genlm-note genlm-heal" }, `healing: ${e.text}`));
  if (st.next_bytes.length) {
    kids.push(h("div", { class: "genlm-title" }, "Next byte"));
    kids.push(table(["byte", "probability"], st.next_bytes.map((b) =>
      h("tr", {}, h("td", {}, h("code", {}, b.label)),
        h("td", {}, bar(b.p), h("span", { class: "genlm-num" }, fmt(b.p)))))));
  }
  kids.push(h("div", { class: "genlm-cols" },
    lineChart([{ name: "logZ", values: data.logZ },
      { name: "logZ upper bound", values: data.logZ_upper || data.logZ, cls: "genlm-line2" }],
      { title: "logZ and its certified upper bound (dashed)" }),
    lineChart([{ name: "LM calls", values: data.lm_calls, cls: "genlm-line2" }], { title: "LM calls per step" })));
  kids.push(beamBand(data));
  return h("div", {}, kids);
}

export default {
  render({ model, el }) {
    return renderInto(el, model, drawBeam, "beam");
  },
};
