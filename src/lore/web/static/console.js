// Lore console panels: documents and chunks, retrieval test, feedback review, keys. Uses app.js's helpers.
"use strict";

Object.assign(I18N.en, {
  documents: "Documents", retrieval: "Retrieval test", feedbackTab: "Feedback", keys: "Keys",
  name: "Name", type: "Type", where_: "Pages/sheets/rows", ocr: "OCR pages", tenant: "Tenant", dataset: "Dataset",
  visibility: "Visibility", roles: "Roles", inVersions: "Versions", updated: "Updated", filter: "Filter…",
  allStatuses: "all statuses", showChunks: "Chunks", parent: "Parent passage", metadata: "Metadata",
  query: "Query", mode: "Mode", topK: "Top k", version: "Version", search: "Search", rank: "Rank",
  dense: "dense", bm25: "BM25", fused: "fused", applied: "Filter applied", terms: "Query terms",
  rating: "Rating", answer: "Answer", note: "Note", export: "Export as eval set", redacted: "redacted: your key may not read a cited passage",
  createKey: "Create key", revoke: "Revoke", created: "Created", revoked: "Revoked", newSecret: "New key (shown once):",
  noDocs: "No documents yet: upload files and ingest or build.", reasonFor: "Why it failed",
  forbidden: "Your key may not do this", cites: "Citations", history: "History", deleteChat: "Delete chat",
  switchOff: "Switch off", switchOn: "Switch on", switchedOff: "switched off", edited: "edited", applied: "applied",
  pendingBuild: "pending: in the next build", pendingIngest: "pending: at the next ingest of this file",
  pageImage: "Page image", wholePage: "The whole page: the passage's region could not be marked.",
  regionMarked: "The passage is highlighted on its page.", regionNotFound: "The passage's text was not found in the page's text layer: the whole page is shown.",
  regionScanned: "A scanned page (no text layer, read by OCR): the whole page is shown.",
  scannedHint: "Scanned pages: each page image beside the text OCR read from it. Fix a misread chunk with Edit, then mark the page reviewed.",
  markReviewed: "Mark page reviewed", reviewedBy: "OCR reviewed by", unmark: "Undo review", unreviewed: "unreviewed",
});
Object.assign(I18N.zh, {
  documents: "文档", retrieval: "检索测试", feedbackTab: "反馈", keys: "密钥",
  name: "名称", type: "类型", where_: "页/表/行", ocr: "OCR 页数", tenant: "租户", dataset: "数据集",
  visibility: "可见性", roles: "角色", inVersions: "所在版本", updated: "更新时间", filter: "筛选…",
  allStatuses: "全部状态", showChunks: "分块", parent: "父段落", metadata: "元数据",
  query: "查询", mode: "模式", topK: "返回条数", version: "版本", search: "检索", rank: "排名",
  dense: "向量", bm25: "BM25", fused: "融合", applied: "实际过滤条件", terms: "查询词",
  rating: "评价", answer: "回答", note: "备注", export: "导出为评测集", redacted: "已隐去：你的密钥无权阅读被引用的段落",
  createKey: "创建密钥", revoke: "吊销", created: "创建时间", revoked: "已吊销", newSecret: "新密钥（只显示一次）：",
  noDocs: "还没有文档：请上传文件并入库或构建。", reasonFor: "失败原因",
  forbidden: "你的密钥无权执行此操作", cites: "引用", history: "历史对话", deleteChat: "删除对话",
  switchOff: "停用", switchOn: "启用", switchedOff: "已停用", edited: "已编辑", applied: "已生效",
  pendingBuild: "待生效：下次构建", pendingIngest: "待生效：该文件下次入库时",
  pageImage: "页面图像", wholePage: "显示整页：无法标出段落所在区域。",
  regionMarked: "段落已在页面上高亮标出。", regionNotFound: "在页面文字层中未找到该段落：显示整页。",
  regionScanned: "扫描页（无文字层，由 OCR 识别）：显示整页。",
  scannedHint: "扫描页：页面图像与 OCR 识别出的文字并排显示，识别有误的分块可点“编辑”修正，然后将该页标记为已审核。",
  markReviewed: "标记本页已审核", reviewedBy: "OCR 审核人", unmark: "撤销审核", unreviewed: "未审核",
});

const kbPath = () => `/api/kbs/${encodeURIComponent($("#docs-kb").value)}`;
let docRows = [];
let docWritable = false;
let docSort = {key: "name", dir: 1};

// ---- documents ---------------------------------------------------------------------------------

function shape(d) {
  const parts = [];
  if (d.pages) parts.push(`${d.pages} ${t("page")}`);
  if (d.slides) parts.push(`${d.slides} ${t("slide")}`);
  if (d.sheets) parts.push(`${d.sheets.length} ${t("sheet")}`);
  if (d.rows) parts.push(`${d.rows} ${t("row")}`);
  return parts.join(" · ");
}

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
    <td>${esc(d.status)}${d.reason ? `<div class="reason" title="${esc(t("reasonFor"))}">${esc(d.reason)}</div>` : ""}</td>
    <td>${d.ocr_pages || ""}${d.ocr_unreviewed ? ` <span class="badge pending ocr-unreviewed">${d.ocr_unreviewed} ${esc(t("unreviewed"))}</span>` : ""}</td><td>${esc(d.tenant ?? "")}</td><td>${esc(d.dataset ?? "")}</td>
    <td>${esc(d.visibility ?? "")}</td><td>${esc((d.roles || []).join(", "))}</td><td>${esc(d.versions.join(", "))}</td>
    <td>${esc(d.updated_at.slice(0, 19).replace("T", " "))}</td>
    <td>${d.chunks ? `<button class="chunks-btn" data-name="${esc(d.name)}">${esc(t("showChunks"))}</button>` : ""}</td></tr>`).join("")
    || `<tr><td colspan="14" class="muted">${esc(t("noDocs"))}</td></tr>`;
  document.querySelectorAll(".chunks-btn").forEach((b) => b.addEventListener("click", () =>
    showChunks(b.dataset.name).catch((e) => toast(e.message, true))));
}

async function loadDocs() {
  if (!$("#docs-kb").value) return;
  const r = await api(`${kbPath()}/documents`);
  docRows = r.documents;
  docWritable = r.writable;
  renderDocs();
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
    const label = done ? `<span class="badge applied">${esc(t("reviewedBy"))} ${esc(done.by)} · ${esc(done.at.slice(0, 16).replace("T", " "))}</span>`
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
    .catch((e) => toast(e.message, true));
  const kb = $("#docs-kb").value;
  el.querySelectorAll(".page-view").forEach((box) => {
    const load = () => showPageIn(box, kb, name, Number(box.dataset.page)).catch((e) => toast(e.message, true));
    box.querySelector(".page-btn").addEventListener("click", load);
    if (scanned) load();  // OCR'd pages: the image beside its text, to review
  });
  el.querySelectorAll(".ocr-review .review-btn").forEach((b) => b.addEventListener("click", () => {
    const box = b.closest(".ocr-review");
    api(`${kbPath()}/documents/${encodeURIComponent(name)}/pages/${box.dataset.page}/review`,
      {method: "PUT", body: JSON.stringify({reviewed: box.dataset.done !== "1"})})
      .then(() => loadDocs()).then(() => showChunks(name)).catch((e) => toast(e.message, true));
  }));
  el.querySelectorAll(".chunk-tools").forEach((box) => {
    const i = Number(box.dataset.index);
    const pre = box.closest(".chunk").querySelector(".chunk-text");
    box.querySelector(".chunk-edit")?.addEventListener("click", () => {
      pre.setAttribute("contenteditable", "plaintext-only");
      pre.focus();
      box.querySelector(".chunk-save").classList.remove("hidden");
    });
    box.querySelector(".chunk-save")?.addEventListener("click", () => send(i, {text: pre.innerText}));
    box.querySelector(".chunk-off").addEventListener("click", () => send(i, edits[i]?.off ? {} : {off: true}));
  });
}

// ---- page images: a PDF page beside its (OCR) text, and the page a citation points at -------------------

const pageImages = new Map();

// A page's PNG (object URL) and, for a cited chunk, whether its region was marked (X-Lore-Region).
async function pageImage(kb, file, page, chunk) {
  const key = `${kb}\u0000${file}\u0000${page}\u0000${chunk || ""}`;
  if (!pageImages.has(key)) {
    const q = chunk ? `?chunk=${encodeURIComponent(chunk)}` : "";
    const r = await fetch(`/api/kbs/${encodeURIComponent(kb)}/documents/${encodeURIComponent(file)}/pages/${page}${q}`, {headers: headers()});
    if (!r.ok) throw new Error(errorText(await r.json().catch(() => null), r.status));
    pageImages.set(key, {url: URL.createObjectURL(await r.blob()), region: r.headers.get("X-Lore-Region") || "none"});
  }
  return pageImages.get(key);
}

async function showPageIn(box, kb, file, page, chunk) {
  const img = document.createElement("img");
  img.className = "page-img";
  img.alt = `${file} · ${t("page")} ${page}`;
  const got = await pageImage(kb, file, page, chunk);
  img.src = got.url;
  box.replaceChildren(img);
  return got.region;
}

const REGION_NOTE = {marked: "regionMarked", "not-found": "regionNotFound", "no-text-layer": "regionScanned", none: "wholePage"};

// The chat's source panel: for a PDF passage, its page with the passage's region highlighted (a scanned
// page, without a text layer, is shown whole and says so).
async function showCitedPage(c, kb) {
  const box = $("#passage-page");
  box.replaceChildren();
  box.classList.add("hidden");
  if (!c.page || !/\.pdf$/i.test(c.file)) return;
  let region;
  try {
    region = await showPageIn(box, kb, c.file, c.page, c.chunk_id).catch(() => showPageIn(box, kb, c.file, c.page));
  } catch (e) { return; /* the original is kept only for uploaded files */ }
  const note = document.createElement("p");
  note.className = `muted region-${region}`;
  note.textContent = t(REGION_NOTE[region] || "wholePage");
  box.appendChild(note);
  box.classList.remove("hidden");
}

// ---- retrieval test ----------------------------------------------------------------------------

function highlight(text, terms) {
  const words = [...new Set(terms.filter((w) => w.trim().length > 0))].sort((a, b) => b.length - a.length);
  if (!words.length) return esc(text);
  const re = new RegExp(words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "gi");
  let out = "", last = 0;
  for (const m of text.matchAll(re)) {
    out += esc(text.slice(last, m.index)) + `<mark>${esc(m[0])}</mark>`;
    last = m.index + m[0].length;
  }
  return out + esc(text.slice(last));
}

async function retrievalTest() {
  const body = {kb: $("#rt-kb").value, query: $("#rt-query").value.trim(), mode: $("#rt-mode").value,
    top_k: Number($("#rt-k").value) || 10};
  if ($("#rt-version").value) body.version = Number($("#rt-version").value);
  if (!body.query) return;
  const r = await api("/api/search", {method: "POST", body: JSON.stringify(body)});
  const fmt = (x) => (x === null || x === undefined ? "" : Number(x).toFixed(4));
  $("#rt-meta").textContent = `${t("terms")}: ${(r.terms || []).join(" ")} · ${t("applied")}: ${JSON.stringify(r.filter || {})}`;
  $("#rt-hits tbody").innerHTML = r.hits.map((h, i) => `<tr><td>${i + 1}</td>
    <td>${fmt(h.score)}</td><td>${fmt(h.dense_score)} ${h.dense_rank ? `(#${h.dense_rank})` : ""}</td>
    <td>${fmt(h.bm25_score)} ${h.bm25_rank ? `(#${h.bm25_rank})` : ""}</td>
    <td><div class="muted">${esc(where(h))}</div><div class="hit-text">${highlight(h.text, r.terms || [])}</div></td></tr>`).join("");
}

// ---- feedback ----------------------------------------------------------------------------------

async function loadFeedback() {
  const rating = $("#fb-rating").value;
  const rows = await api(`/api/feedback${rating ? `?rating=${rating}` : ""}`);
  $("#fb tbody").innerHTML = rows.map((f) => `<tr><td>${esc(f.created_at.slice(0, 19).replace("T", " "))}</td>
    <td>${esc(f.kb)}</td><td>${f.rating > 0 ? "👍" : "👎"}</td><td>${esc(f.question)}</td>
    <td>${f.redacted ? `<span class="warning">${esc(t("redacted"))}</span>` : esc(f.answer)}</td>
    <td>${f.citations.map((c) => `<div class="muted">[${c.n}] ${esc(where(c))}</div>`).join("")}</td><td>${esc(f.note)}</td></tr>`).join("");
}

async function exportFeedback() {
  const r = await fetch("/api/feedback/export", {headers: headers()});
  if (!r.ok) throw new Error(errorText(await r.json().catch(() => null), r.status));
  const a = document.createElement("a");
  a.href = URL.createObjectURL(await r.blob());
  a.download = "badcases.jsonl";
  a.click();
}

// ---- keys --------------------------------------------------------------------------------------

async function loadKeys() {
  const rows = await api("/api/keys");
  $("#keys tbody").innerHTML = rows.map((k) => `<tr class="${k.revoked_at ? "revoked" : ""}"><td><code>${esc(k.prefix)}…</code></td>
    <td>${esc(k.name)}</td><td>${esc(k.roles.join(", "))}</td><td>${esc((k.datasets || []).join(", "))}</td>
    <td>${esc(k.created_at.slice(0, 19).replace("T", " "))}</td>
    <td>${k.revoked_at ? esc(t("revoked")) : `<button class="revoke" data-id="${esc(k.id)}">${esc(t("revoke"))}</button>`}</td></tr>`).join("");
  document.querySelectorAll(".revoke").forEach((b) => b.addEventListener("click", () => {
    if (!confirm(`${t("revoke")} ${b.dataset.id}?`)) return;
    api(`/api/keys/${encodeURIComponent(b.dataset.id)}`, {method: "DELETE"}).then(loadKeys).catch((e) => toast(e.message, true));
  }));
}

async function createKey() {
  const list = (id) => $(id).value.split(",").map((s) => s.trim()).filter(Boolean);
  const body = {roles: list("#key-roles"), name: $("#key-name").value.trim()};
  if (list("#key-datasets").length) body.datasets = list("#key-datasets");
  const r = await api("/api/keys", {method: "POST", body: JSON.stringify(body)});
  $("#key-secret").textContent = `${t("newSecret")} ${r.secret}`;
  $("#key-secret").classList.remove("hidden");
  await loadKeys();
}

// ---- reports: any JSON report as nested tables (scalars as rows, lists of records as tables) ----------

function renderValue(v) {
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

// ---- chat history: the key's sessions, to continue or delete -------------------------------------

async function loadHistory() {
  const rows = await api("/api/sessions");
  const sel = $("#history");
  sel.innerHTML = `<option value="">–</option>` + rows.map((r) =>
    `<option value="${esc(r.id)}">${esc(r.updated_at.slice(0, 16).replace("T", " "))} · ${esc(r.kb)} · ${esc(r.title || r.summary || r.id)}</option>`).join("");
  if (rows.some((r) => r.id === sessionId)) sel.value = sessionId;
}

async function openSession(id) {
  if (!id) return;
  const s = await api(`/api/sessions/${encodeURIComponent(id)}`);
  newChat();
  sessionId = s.id;
  if ([...$("#chat-kb").options].some((o) => o.value === s.kb)) $("#chat-kb").value = s.kb;
  $("#messages").innerHTML = s.messages.map((m) => `<div class="msg ${m.role === "user" ? "user" : "assistant"}">${esc(m.content)}</div>`).join("");
  $("#history").value = id;
}

// ---- wiring ------------------------------------------------------------------------------------

// A panel's load: what a key may not see is explained in place (403), not only in a toast.
function guarded(panel, fn) {
  return () => fn().then(() => $(`#${panel} .denied`)?.classList.add("hidden")).catch((e) => {
    const note = $(`#${panel} .denied`);
    if (note && /403|may not|needs an API key/.test(e.message)) {
      note.textContent = `${t("forbidden")}: ${e.message}`;
      note.classList.remove("hidden");
    } else toast(e.message, true);
  });
}

const PANEL_LOADS = {
  documents: guarded("tab-documents", async () => { await syncKbPickers(); await loadDocs(); }),
  retrieval: guarded("tab-retrieval", () => syncKbPickers()),
  feedback: guarded("tab-feedback", loadFeedback),
  keys: guarded("tab-keys", loadKeys),
};

const syncKbPickers = () => loadKbs();

document.addEventListener("DOMContentLoaded", () => {
  $("#history").addEventListener("focus", () => loadHistory().catch((e) => toast(e.message, true)));
  $("#history").addEventListener("change", () => openSession($("#history").value).catch((e) => toast(e.message, true)));
  $("#delete-session").addEventListener("click", () => {
    if (!sessionId || !confirm(`${t("deleteChat")}?`)) return;
    api(`/api/sessions/${encodeURIComponent(sessionId)}`, {method: "DELETE"})
      .then(() => { newChat(); return loadHistory(); }).catch((e) => toast(e.message, true));
  });
  document.querySelectorAll(".tab").forEach((b) => b.addEventListener("click", () => PANEL_LOADS[b.dataset.tab]?.()));
  $("#docs-kb").addEventListener("change", PANEL_LOADS.documents);
  $("#docs-filter").addEventListener("input", renderDocs);
  $("#docs-status").addEventListener("change", renderDocs);
  document.querySelectorAll("#docs th[data-sort]").forEach((th) => th.addEventListener("click", () => {
    docSort = {key: th.dataset.sort, dir: docSort.key === th.dataset.sort ? -docSort.dir : 1};
    renderDocs();
  }));
  $("#rt-form").addEventListener("submit", (e) => { e.preventDefault(); guarded("tab-retrieval", retrievalTest)(); });
  $("#fb-rating").addEventListener("change", PANEL_LOADS.feedback);
  $("#fb-export").addEventListener("click", () => exportFeedback().catch((e) => toast(e.message, true)));
  $("#key-form").addEventListener("submit", (e) => { e.preventDefault(); createKey().catch((er) => toast(er.message, true)); });
});
