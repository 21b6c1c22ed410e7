// CodeBox: "Copy as code" puts the Python of the current choices on the clipboard where the
// browser allows it; the box below always opens with the code selected (Ctrl+C copies it).
function drawCodeBox(model) {
  const box = h("textarea", { class: "genlm-code-text", readonly: "readonly", rows: 12,
                              spellcheck: "false", style: "width: 100%; display: none" });
  const note = h("span", { class: "genlm-note genlm-code-note" }, "");
  const show = () => {
    box.value = model.get("code") || "";
    box.style.display = model.get("shown") ? "block" : "none";
  };
  const said = (how) => {
    model.set("copied", how);
    model.save_changes();
    note.textContent = how === "clipboard"
      ? "copied to the clipboard" : "selected: press Ctrl+C (Cmd+C) to copy";
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
  model.on("change:code", show);
  model.on("change:shown", show);
  show();
  return [h("div", {}, button, " ", note), box, () => {
    model.off("change:code", show);
    model.off("change:shown", show);
  }];
}

export default {
  render({ model, el }) {
    el.classList.add("genlm-view", "genlm-live", "genlm-codebox");
    const [bar, box, off] = drawCodeBox(model);
    el.replaceChildren(bar, box);
    return off;
  },
};
