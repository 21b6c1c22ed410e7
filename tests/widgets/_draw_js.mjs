// Runs a view's browser module under a minimal DOM in node and prints the markup it draws.
// Usage: node _draw_js.mjs VIEW.js DRAW_FUNCTION < data.json  (tests/widgets/test_particle_view.py)
import fs from "fs";
import path from "path";
import { fileURLToPath } from "url";

class Node {
  constructor(tag, ns) {
    this.tag = tag; this.ns = ns; this.attrs = {}; this.children = []; this.style = {};
  }
  set className(v) { this.attrs.class = v; }
  get className() { return this.attrs.class || ""; }
  setAttribute(k, v) { this.attrs[k] = String(v); }
  getAttribute(k) { return this.attrs[k] ?? null; }
  addEventListener() {}
  append(...nodes) { this.children.push(...nodes); }
  get classList() { return { toggle() {}, add() {}, remove() {} }; }
  get html() {
    const esc = (t) => String(t).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
    const attrs = Object.entries(this.attrs).map(([k, v]) => ` ${k}="${esc(v).replace(/"/g, "&quot;")}"`).join("");
    return `<${this.tag}${attrs}>${this.children.map((c) => c.html).join("")}</${this.tag}>`;
  }
}
class Text extends Node {
  constructor(t) { super("#text"); this.text = t; }
  get html() { return String(this.text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"); }
}
globalThis.Node = Node;
globalThis.document = {
  createElement: (t) => new Node(t),
  createElementNS: (ns, t) => new Node(t, ns),
  createTextNode: (t) => new Text(t),
};

const here = path.dirname(fileURLToPath(import.meta.url));
const widgets = path.join(here, "..", "..", "widgets");
const [view, draw] = process.argv.slice(2);
const src = fs.readFileSync(path.join(widgets, "_common.js"), "utf8") + "\n" +
  fs.readFileSync(path.join(widgets, view), "utf8").replace(/export default[\s\S]*$/, "") +
  `\nexport { ${draw} };\n`;
const url = "data:text/javascript;base64," + Buffer.from(src).toString("base64");
const mod = await import(url);
const data = JSON.parse(fs.readFileSync(0, "utf8"));
process.stdout.write(mod[draw](data).html);
