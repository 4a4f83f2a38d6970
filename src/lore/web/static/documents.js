// The documents tab: a knowledge base's files with their state, and a file's chunks to edit, switch off,
// or (scanned PDF pages) review beside the page image.
import {t} from "./i18n.js";
import {$, api, busy, esc, fail, guarded, loadKbs, toast, when, where} from "./common.js";
import {showPageIn} from "./pages.js";
import {fileState, onProgress, resume, stateHtml} from "./progress.js";

const kbPath = () => `/api/kbs/${encodeURIComponent($("#docs-kb").value)}`;
let docRows = [];
let docWritable = false;
let docKb = "";  // the knowledge base docRows are of
let docSort = {key: "name", dir: 1};

function shape(d) {
  const parts = [];
  if (d.pages) parts.push(`${d.pages} ${t("page")}`);
  if (d.slides) parts.push(`${d.slides} ${t("slide")}`);
  if (d.sheets) parts.push(`${d.sheets.length} ${t("sheet")}`);
  if (d.rows) parts.push(`${d.rows} ${t("row")}`);
  return parts.join(" · ");
}

// A row's state: a running build's word first, then the catalog's (uploads never indexed are queued).
const stateOf = (d) => fileState(docKb, d.name, d.upload ? null : {status: d.status, reason: d.reason, chunks: d.chunks}, d.changed);

function renderDocs() {
  const q = $("#docs-filter").value.trim().toLowerCase();
  const status = $("#docs-status").value;
  const rows = docRows.filter((d) => (!q || d.name.toLowerCase().includes(q)) && (!status || d.status === status))
    .sort((a, b) => {
      const x = a[docSort.key] ?? "", y = b[docSort.key] ?? "";
      return (typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y))) * docSort.dir;
    });
  $("#docs tbody").innerHTML = rows.map((d) => `<tr class="st-${esc(d.status)}">
    <td>${esc(d.name)}</td><td>${esc(d.type)}</td><td>${d.size}</td><td>${esc(shape(d))}</td><td>${d.chunks}</td>
    <td>${stateHtml(stateOf(d), docKb, d.name)}</td>
    <td>${d.ocr_pages || ""}${d.ocr_unreviewed ? ` <span class="badge pending ocr-unreviewed">${d.ocr_unreviewed} ${esc(t("unreviewed"))}</span>` : ""}</td><td>${esc(d.tenant ?? "")}</td><td>${esc(d.dataset ?? "")}</td>
    <td>${esc(d.visibility ?? "")}</td><td>${esc((d.roles || []).join(", "))}</td><td>${esc(d.versions.join(", "))}</td>
    <td>${esc(when(d.updated_at))}</td>
    <td>${d.chunks ? `<button class="chunks-btn" data-name="${esc(d.name)}">${esc(t("showChunks"))}</button>` : ""}</td></tr>`).join("")
    || `<tr><td colspan="14" class="muted">${esc(t("noDocs"))}</td></tr>`;
  document.querySelectorAll(".chunks-btn").forEach((b) => b.addEventListener("click", () =>
    busy(b, () => showChunks(b.dataset.name)).catch(fail)));
}

// The catalogued files and, for a key that may upload, the uploads not indexed yet (or changed since).
async function loadDocs() {
  const kb = $("#docs-kb").value;
  if (!kb) return;
  const r = await api(`${kbPath()}/documents`);
  const uploads = r.writable ? (await api(`${kbPath()}/files`)).uploads : [];
  const known = Object.fromEntries(r.documents.map((d) => [d.name, d]));
  for (const u of uploads) if (known[u.name] && known[u.name].size !== u.size) known[u.name].changed = true;
  const waiting = uploads.filter((u) => !known[u.name]).map((u) => ({name: u.name, upload: true, size: u.size,
    type: u.name.includes(".") ? u.name.split(".").pop().toLowerCase() : "?", status: "queued", chunks: 0, versions: [], updated_at: ""}));
  docRows = [...r.documents, ...waiting];
  docWritable = r.writable;
  docKb = kb;
  renderDocs();
  resume(kb);
}

async function showChunks(name) {
  const r = await api(`${kbPath()}/documents/${encodeURIComponent(name)}/chunks`);
  const edits = Object.fromEntries(r.edits.map((e) => [e.chunk_index, e]));
  const shown = new Set(r.chunks.map((c) => c.chunk_index));
  const badge = (e) => (!e ? "" : `<span class="badge ${e.pending ? "pending" : "applied"}">${esc(e.off ? t("switchedOff") : t("edited"))} ·
    ${esc(e.pending ? t(r.versioned ? "pendingBuild" : "pendingIngest") : e.applied_in ? `${t("version")} ${e.applied_in}` : t("applied"))}</span>`);
  const tools = (i, off) => (docWritable ? `<span class="chunk-tools" data-index="${i}">
    ${off ? "" : `<button class="chunk-edit">${esc(t("edit"))}</button><button class="chunk-save hidden">${esc(t("save"))}</button>`}
    <button class="chunk-off">${esc(t(off ? "switchOn" : "switchOff"))}</button></span>` : "");
  const gone = r.edits.filter((e) => e.off && !shown.has(e.chunk_index)).map((e) =>
    `<div class="chunk off"><span class="muted">#${e.chunk_index}</span> ${badge(e)} ${tools(e.chunk_index, true)}
     <pre class="chunk-text">${esc(e.original_text)}</pre></div>`);
  const pdf = /\.pdf$/i.test(name);
  const scanned = (docRows.find((d) => d.name === name) || {}).ocr_pages > 0;
  const ocrPages = new Set(r.ocr ? r.ocr.pages : []);
  const firstOnPage = new Set();
  const review = (c) => {
    if (!ocrPages.has(c.page) || firstOnPage.has(c.page)) return "";
    firstOnPage.add(c.page);
    const done = r.ocr.reviewed[String(c.page)];
    const label = done ? `<span class="badge applied">${esc(t("reviewedBy"))} ${esc(done.by)} · ${esc(when(done.at, 16))}</span>`
      : `<span class="badge pending">${esc(t("unreviewed"))}</span>`;
    return `<span class="ocr-review" data-page="${c.page}" data-done="${done ? 1 : 0}">${label}
      ${docWritable ? `<button class="review-btn">${esc(t(done ? "unmark" : "markReviewed"))}</button>` : ""}</span>`;
  };
  const el = $("#doc-chunks");
  el.innerHTML = `<h4>${esc(name)}: ${r.chunks.length} ${esc(t("chunks"))}</h4>` +
    (scanned ? `<p class="muted">${esc(t("scannedHint"))}</p>` : "") + r.chunks.map((c) =>
    `<div class="chunk${edits[c.chunk_index]?.off ? " off" : ""}" data-index="${c.chunk_index}"><span class="muted">#${c.chunk_index} ${esc(where({file: name, ...c}))} · ${esc(c.visibility)}
     ${c.allowed_roles.length ? "· " + esc(c.allowed_roles.join(",")) : ""}</span> ${badge(edits[c.chunk_index])}
     ${tools(c.chunk_index, Boolean(edits[c.chunk_index]?.off))} ${review(c)}
     ${pdf && c.page ? `<div class="side"><pre class="chunk-text">${esc(c.text)}</pre><div class="page-view" data-page="${c.page}">
       <button class="page-btn">${esc(t("pageImage"))} ${c.page}</button></div></div>` : `<pre class="chunk-text">${esc(c.text)}</pre>`}
     <details><summary>${esc(t("parent"))}</summary><pre>${esc(c.parent_text)}</pre></details>
     <details><summary>${esc(t("metadata"))}</summary><pre>${esc(JSON.stringify(c, (k, v) =>
       (k === "text" || k === "parent_text" ? undefined : v), 2))}</pre></details></div>`).join("") + gone.join("");
  el.classList.remove("hidden");
  const send = (i, body) => api(`${kbPath()}/documents/${encodeURIComponent(name)}/chunks/${i}`, {method: "PUT", body: JSON.stringify(body)})
    .then((x) => { toast(x.applied ? t("applied") : t(r.versioned ? "pendingBuild" : "pendingIngest")); return showChunks(name); })
    .catch(fail);
  const kb = $("#docs-kb").value;
  el.querySelectorAll(".page-view").forEach((box) => {
    const load = () => showPageIn(box, kb, name, Number(box.dataset.page)).catch(fail);
    box.querySelector(".page-btn").addEventListener("click", load);
    if (scanned) load();  // OCR'd pages: the image beside its text, to review
  });
  el.querySelectorAll(".ocr-review .review-btn").forEach((b) => b.addEventListener("click", () => {
    const box = b.closest(".ocr-review");
    busy(b, () => api(`${kbPath()}/documents/${encodeURIComponent(name)}/pages/${box.dataset.page}/review`,
      {method: "PUT", body: JSON.stringify({reviewed: box.dataset.done !== "1"})})
      .then(() => loadDocs()).then(() => showChunks(name))).catch(fail);
  }));
  el.querySelectorAll(".chunk-tools").forEach((box) => {
    const i = Number(box.dataset.index);
    const pre = box.closest(".chunk").querySelector(".chunk-text");
    box.querySelector(".chunk-edit")?.addEventListener("click", () => {
      pre.setAttribute("contenteditable", "plaintext-only");
      pre.focus();
      box.querySelector(".chunk-save").classList.remove("hidden");
    });
    const save = box.querySelector(".chunk-save"), off = box.querySelector(".chunk-off");
    save?.addEventListener("click", () => busy([save, off], () => send(i, {text: pre.innerText})));
    off.addEventListener("click", () => busy([save, off], () => send(i, edits[i]?.off ? {} : {off: true})));
  });
}

// The tab's load: the pickers, then the chosen knowledge base's documents.
export const loadDocsPanel = guarded("tab-documents", async () => { await loadKbs(); await loadDocs(); });

export function initDocuments() {
  $("#docs-kb").addEventListener("change", loadDocsPanel);
  $("#docs-filter").addEventListener("input", renderDocs);
  $("#docs-status").addEventListener("change", renderDocs);
  // A build's progress redraws the rows as it comes; its end reloads them from the catalog.
  onProgress((kb, ended) => { if (kb === docKb) (ended ? loadDocs().catch(fail) : renderDocs()); });
  document.querySelectorAll("#docs th[data-sort]").forEach((th) => th.addEventListener("click", () => {
    docSort = {key: th.dataset.sort, dir: docSort.key === th.dataset.sort ? -docSort.dir : 1};
    renderDocs();
  }));
}
