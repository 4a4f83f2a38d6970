// What every panel of the web UI uses: the DOM and escaping, the toast, the API calls, streamed events,
// a report as tables, where a passage stands, and the knowledge-base pickers.
import {t} from "./i18n.js";

export const $ = (sel) => document.querySelector(sel);
export const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
// An ISO time as "YYYY-MM-DD hh:mm:ss" (or its first `chars` characters).
export const when = (iso, chars = 19) => iso.slice(0, chars).replace("T", " ");

export function toast(msg, bad = false) {
  const el = $("#toast");
  el.textContent = msg;
  el.className = "toast" + (bad ? " bad" : "");
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => el.classList.add("hidden"), 5000);
}

// A failed load's message as a red toast: the `.catch` of every button and picker.
export const fail = (e) => toast(e.message, true);

// Runs `fn` with the buttons disabled (and marked busy) until it settles: a second click cannot start it twice.
export async function busy(buttons, fn) {
  const list = [buttons].flat().filter(Boolean);
  if (list.some((b) => b.disabled)) return undefined;
  list.forEach((b) => { b.disabled = true; b.setAttribute("aria-busy", "true"); });
  try { return await fn(); } finally { list.forEach((b) => { b.disabled = false; b.removeAttribute("aria-busy"); }); }
}

export function headers(extra = {}) {
  const key = $("#key").value.trim();
  if (!key) throw new Error(t("needKey"));
  return {Authorization: `Bearer ${key}`, ...extra};
}

// The error text of a failed request: FastAPI's `detail` (a string, or a list of field errors) or the status.
export function errorText(body, status) {
  const detail = body && body.detail;
  if (!detail) return `HTTP ${status}`;
  return typeof detail === "string" ? detail : JSON.stringify(detail);
}

// A JSON (or text) API call with the key; a failure throws its error text.
export async function api(path, opts = {}) {
  const init = {...opts, headers: headers(opts.body && !(opts.body instanceof FormData) ? {"Content-Type": "application/json"} : {})};
  const r = await fetch(path, init);
  if (r.status === 204) return null;
  const body = r.headers.get("content-type")?.includes("json") ? await r.json() : await r.text();
  if (!r.ok) throw new Error(errorText(body, r.status));
  return body;
}

// A call whose body is read by the caller (a stream, a file) with the key; a failure throws its error text.
export async function fetchOk(path, opts = {}) {
  const r = await fetch(path, {...opts, headers: headers(opts.headers)});
  if (!r.ok) throw new Error(errorText(await r.json().catch(() => null), r.status));
  return r;
}

// A server-sent-event response as {event, data} records.
export async function* sseEvents(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buf += decoder.decode(value, {stream: true});
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let event = "message", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      yield {event, data: JSON.parse(data)};
    }
  }
}

// Any JSON report as nested tables (scalars as rows, lists of records as tables).
export function renderValue(v) {
  if (v === null || v === undefined) return "";
  if (Array.isArray(v)) {
    if (!v.length) return "–";
    if (v.every((x) => x && typeof x === "object" && !Array.isArray(x))) {
      const cols = [...new Set(v.flatMap((x) => Object.keys(x)))];
      return `<table><tr>${cols.map((c) => `<th>${esc(c)}</th>`).join("")}</tr>${v.map((x) =>
        `<tr>${cols.map((c) => `<td>${renderValue(x[c])}</td>`).join("")}</tr>`).join("")}</table>`;
    }
    return v.map((x) => renderValue(x)).join(", ");
  }
  if (typeof v === "object") {
    return `<table>${Object.entries(v).map(([k, x]) => `<tr><th>${esc(k)}</th><td>${renderValue(x)}</td></tr>`).join("")}</table>`;
  }
  if (typeof v === "boolean") return v ? "✔" : "✘";
  return esc(v);
}

// Where a passage stands: its file, page/slide/sheet/row and headings.
export function where(c) {
  const parts = [c.file];
  if (c.page) parts.push(`${t("page")} ${c.page}`);
  if (c.slide) parts.push(`${t("slide")} ${c.slide}`);
  if (c.sheet) parts.push(`${t("sheet")} ${c.sheet}`);
  if (c.row) parts.push(`${t("row")} ${c.row}`);
  if (c.heading_path && c.heading_path.length) parts.push(c.heading_path.join(" › "));
  return parts.join(" · ");
}

// Fills every knowledge-base picker with the key's knowledge bases, keeping each one's choice.
export async function loadKbs() {
  const kbs = await api("/api/kbs");
  for (const sel of document.querySelectorAll("select.kb-picker")) {
    const keep = sel.value;
    sel.innerHTML = kbs.map((k) => `<option>${esc(k.name)}</option>`).join("");
    if (kbs.some((k) => k.name === keep)) sel.value = keep;
  }
  return kbs;
}

// A panel's load: what a key may not see is explained in place (403), not only in a toast.
export function guarded(panel, fn) {
  return () => fn().then(() => $(`#${panel} .denied`)?.classList.add("hidden")).catch((e) => {
    const note = $(`#${panel} .denied`);
    if (note && (e.denied || /403|may not|needs an API key/.test(e.message))) {
      note.textContent = `${t("forbidden")}: ${e.message}`;
      note.classList.remove("hidden");
    } else toast(e.message, true);
  });
}

// Thumbs up/down as inline SVG: no emoji font needed (a server without one shows boxes).
const THUMB = "M2 21h4V9H2v12zm20-11c0-1.1-.9-2-2-2h-6.3l1-4.6v-.3c0-.4-.2-.8-.4-1.1L13.2 1 6.6 7.6C6.2 8 6 8.5 6 9v10" +
  "c0 1.1.9 2 2 2h9c.8 0 1.5-.5 1.8-1.2l3-7c.1-.2.2-.5.2-.8v-2z";
export const ICONS = {
  up: `<svg class="icon" viewBox="0 0 24 24" width="16" height="16" aria-hidden="true"><path fill="currentColor" d="${THUMB}"/></svg>`,
  down: `<svg class="icon" viewBox="0 0 24 24" width="16" height="16" aria-hidden="true"><path fill="currentColor" transform="rotate(180 12 12)" d="${THUMB}"/></svg>`,
};

// What the entered key is and may do (`GET /api/me`); null until known. The server decides every request:
// this only hides what the key could not use.
export const session = {me: null};
export const may = (action) => !session.me || session.me.actions.includes(action);
