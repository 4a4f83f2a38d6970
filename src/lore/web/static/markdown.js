// An answer as Markdown (tables, lists, links, code), made safe: HTML written in the text (a document's, quoted
// by the answer) shows as text, DOMPurify removes whatever else could run, and [n] markers become buttons.
import {Marked} from "./vendor/marked.esm.js";
import DOMPurify from "./vendor/purify.es.mjs";
import {esc} from "./common.js";

const md = new Marked({gfm: true, breaks: true, renderer: {html: (token) => esc(token.text)}});
const FORBID_TAGS = ["img", "style", "form", "input", "button", "textarea", "select", "iframe", "svg", "math"];
const SKIP = new Set(["CODE", "PRE", "A"]);  // a "[1]" in code or a link's text is not a citation

// Links open outside the console, without handing it over to the page they open.
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") { node.setAttribute("target", "_blank"); node.setAttribute("rel", "noopener noreferrer"); }
});

// The answer's text as safe DOM in `el`; each [n] of a known citation becomes a button calling `open(n)`.
export function renderMarkdown(el, text, known = new Set(), open = null) {
  const html = md.parse(String(text ?? ""), {async: false});
  el.replaceChildren(DOMPurify.sanitize(html, {FORBID_TAGS, FORBID_ATTR: ["style", "class", "id"], RETURN_DOM_FRAGMENT: true}));
  el.classList.add("md");
  if (!known.size) return;
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  const found = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    let up = n.parentElement, skip = false;
    for (; up && up !== el; up = up.parentElement) skip ||= SKIP.has(up.tagName);
    if (!skip && /\[\d+\]/.test(n.data)) found.push(n);
  }
  for (const node of found) {
    const parts = node.data.split(/(\[\d+\])/);
    node.replaceWith(...parts.map((p) => {
      const m = /^\[(\d+)\]$/.exec(p);
      if (!m || !known.has(m[1])) return p;
      const b = document.createElement("button");
      b.className = "cite";
      b.dataset.n = m[1];
      b.textContent = p;
      if (open) b.addEventListener("click", () => open(m[1]));
      return b;
    }));
  }
}
