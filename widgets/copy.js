// CodeBox: "Copy as code" puts the box's Python on the clipboard where the browser allows
// it; the box below always opens with the code selected (Ctrl+C copies it). A label says
// what the code describes (the run shown, a changed form, nothing run yet); the copy's
// message lasts until Python clears `copied` (the code or its label changed).
function drawCodeBox(model, el) {
  const box = h("textarea", { class: "genlm-code-text", readonly: "readonly", rows: 12,
                              spellcheck: "false", style: "width: 100%; display: none" });
  const label = h("span", { class: "genlm-note genlm-code-label" }, "");
  const note = h("span", { class: "genlm-note genlm-code-note" }, "");
  const show = () => {
    box.value = model.get("code") || "";
    box.style.display = model.get("shown") ? "block" : "none";
    label.textContent = model.get("label") || "";
    for (const state of ["not_run", "shown", "changed"]) {
      el.classList.toggle(`genlm-code-${state}`, model.get("state") === state);
    }
  };
  const tell = () => {
    const how = model.get("copied");
    note.textContent = how === "clipboard" ? "copied to the clipboard"
      : how === "selected" ? "selected: press Ctrl+C (Cmd+C) to copy" : "";
  };
  const said = (how) => {
    model.set("copied", how);
    model.save_changes();
    tell();
  };
  const copy = () => {
    const code = model.get("code") || "";
    model.set("shown", true);
    model.save_changes();
    show();
    box.focus();
    box.select();
    const fallback = () => {
      let ok = false;
      try { ok = document.execCommand("copy"); } catch (err) { ok = false; }
      said(ok ? "clipboard" : "selected");
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(code).then(() => said("clipboard"), fallback);
    } else {
      fallback();
    }
  };
  const button = h("button", { class: "jupyter-button genlm-code-button", onclick: copy },
                   "Copy as code");
  const events = ["change:code", "change:shown", "change:label", "change:state"];
  for (const event of events) model.on(event, show);
  model.on("change:copied", tell);
  show();
  tell();
  return [h("div", {}, button, " ", label, " ", note), box, () => {
    for (const event of events) model.off(event, show);
    model.off("change:copied", tell);
  }];
}

export default {
  render({ model, el }) {
    el.classList.add("genlm-view", "genlm-live", "genlm-codebox");
    const [bar, box, off] = drawCodeBox(model, el);
    el.replaceChildren(bar, box);
    return off;
  },
};
