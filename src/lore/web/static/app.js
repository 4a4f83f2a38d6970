// Lore web UI: chat with streamed, cited answers; knowledge-base admin; traces. No build step.
"use strict";

const I18N = {
  en: {
    chat: "Chat", admin: "Knowledge bases", traces: "Traces", apiKey: "API key", kb: "Knowledge base",
    newChat: "New chat", source: "Source", openOriginal: "Open the original file", askPlaceholder: "Ask a question…",
    ask: "Ask", create: "Create", upload: "Upload", file: "File", size: "Size", activateAfter: "activate after build",
    qualityGate: "quality gate", build: "Build new version", ingest: "Ingest (unversioned)", versions: "Versions",
    status: "Status", files: "Files +/~/-/=", chunks: "Chunks", gate: "Gate", rollback: "Roll back",
    refresh: "Refresh", time: "Time", question: "Question", route: "Route", activate: "Activate",
    report: "Report", diff: "Diff", preview: "Preview", needKey: "Enter an API key first.",
    lowConfidence: "Low confidence: check the cited passages.", refused: "Not in the knowledge base",
    confidence: "confidence", helpful: "Helpful", notHelpful: "Not helpful", thanks: "Thanks for the feedback.",
    page: "page", sheet: "sheet", row: "row", slide: "slide", building: "Building…", uploading: "Uploading…",
    done: "Done", trace: "trace", noteprompt: "What was wrong? (optional)",
    deepMode: "Deep mode", round: "round", plan: "Plan", rounds: "rounds", found: "found",
    notFound: "not found in the knowledge base", disagree: "documents disagree",
    scenario: "Scenario", noScenario: "(none)", profile: "profile", cache: "Search cache", hit: "hit", miss: "miss",
    results: "results", key: "key", noCache: "no cached searches (unversioned KB or no scenario)",
    drop: "drop", commitChunks: "Commit these chunks", committed: "chunks committed",
    editHint: "Edit the chunks' text or drop chunks, then commit them (replaces this file's chunks).",
    versionedNoCommit: "Versioned knowledge base: chunks change only through builds.",
    routes: {retrieval: "retrieval", faq_exact: "FAQ (exact)", faq_direct: "FAQ", greeting: "greeting",
      thanks: "thanks", handoff: "hand-off to a person", out_of_scope: "out of scope", refused: "refused"},
  },
  zh: {
    chat: "问答", admin: "知识库", traces: "追踪", apiKey: "API 密钥", kb: "知识库",
    newChat: "新对话", source: "来源", openOriginal: "打开原始文件", askPlaceholder: "请输入问题…",
    ask: "提问", create: "创建", upload: "上传", file: "文件", size: "大小", activateAfter: "构建后激活",
    qualityGate: "质量门禁", build: "构建新版本", ingest: "直接入库（无版本）", versions: "版本",
    status: "状态", files: "文件 +/~/-/=", chunks: "分块", gate: "门禁", rollback: "回滚",
    refresh: "刷新", time: "时间", question: "问题", route: "路由", activate: "激活",
    report: "报告", diff: "差异", preview: "预览", needKey: "请先输入 API 密钥。",
    lowConfidence: "置信度低：请核对引用的段落。", refused: "知识库中没有相关内容",
    confidence: "置信度", helpful: "有帮助", notHelpful: "没帮助", thanks: "感谢反馈。",
    page: "页", sheet: "工作表", row: "行", slide: "幻灯片", building: "构建中…", uploading: "上传中…",
    done: "完成", trace: "追踪", noteprompt: "哪里不对？（可选）",
    deepMode: "深度模式", round: "轮", plan: "分解", rounds: "轮检索", found: "已找到",
    notFound: "知识库中没有找到", disagree: "资料不一致",
    scenario: "场景", noScenario: "（无）", profile: "提示模板", cache: "检索缓存", hit: "命中", miss: "未命中",
    results: "结果数", key: "键", noCache: "没有缓存的检索（无版本知识库或未使用场景）",
    drop: "删除", commitChunks: "提交这些分块", committed: "个分块已提交",
    editHint: "可编辑分块文本或删除分块，然后提交（替换该文件现有的分块）。",
    versionedNoCommit: "有版本的知识库：分块只能通过构建更新。",
    routes: {retrieval: "检索", faq_exact: "FAQ（精确匹配）", faq_direct: "FAQ", greeting: "问候",
      thanks: "致谢", handoff: "转人工", out_of_scope: "超出范围", refused: "拒答"},
  },
};
let lang = localStorage.getItem("lore.lang") || (navigator.language.startsWith("zh") ? "zh" : "en");
const t = (k) => (I18N[lang] && I18N[lang][k]) || I18N.en[k] || k;
const routeName = (r) => (I18N[lang].routes || {})[r] || I18N.en.routes[r] || r;
const $ = (sel) => document.querySelector(sel);
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
let sessionId = null;
let kbInfo = null;  // the admin tab's knowledge base (versioned or not decides if chunks can be committed)

function applyLang() {
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  document.querySelectorAll("[data-i18n]").forEach((el) => { el.textContent = t(el.dataset.i18n); });
  document.querySelectorAll("[data-i18n-placeholder]").forEach((el) => { el.placeholder = t(el.dataset.i18nPlaceholder); });
  $("#lang").textContent = lang === "zh" ? "English" : "中文";
}

function toast(msg, bad = false) {
  const el = $("#toast");
  el.textContent = msg;
  el.className = "toast" + (bad ? " bad" : "");
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => el.classList.add("hidden"), 5000);
}

function headers(extra = {}) {
  const key = $("#key").value.trim();
  if (!key) throw new Error(t("needKey"));
  return {Authorization: `Bearer ${key}`, ...extra};
}

// The error text of a failed request: FastAPI's `detail` (a string, or a list of field errors) or the status.
function errorText(body, status) {
  const detail = body && body.detail;
  if (!detail) return `HTTP ${status}`;
  return typeof detail === "string" ? detail : JSON.stringify(detail);
}

async function api(path, opts = {}) {
  const init = {...opts, headers: headers(opts.body && !(opts.body instanceof FormData) ? {"Content-Type": "application/json"} : {})};
  const r = await fetch(path, init);
  if (r.status === 204) return null;
  const body = r.headers.get("content-type")?.includes("json") ? await r.json() : await r.text();
  if (!r.ok) throw new Error(errorText(body, r.status));
  return body;
}

// ---- chat --------------------------------------------------------------------------------------

function where(c) {
  const parts = [c.file];
  if (c.page) parts.push(`${t("page")} ${c.page}`);
  if (c.slide) parts.push(`${t("slide")} ${c.slide}`);
  if (c.sheet) parts.push(`${t("sheet")} ${c.sheet}`);
  if (c.row) parts.push(`${t("row")} ${c.row}`);
  if (c.heading_path && c.heading_path.length) parts.push(c.heading_path.join(" › "));
  return parts.join(" · ");
}

async function openPassage(c, kb) {
  $("#passage").classList.remove("hidden");
  $("#passage-where").textContent = where(c);
  $("#passage-text").textContent = c.text;
  showCitedPage(c, kb);
  const link = $("#passage-link");
  link.classList.add("hidden");
  const name = c.file.split("/").pop();
  try {
    const r = await fetch(`/api/kbs/${encodeURIComponent(kb)}/files/${encodeURIComponent(name)}`, {headers: headers()});
    if (r.ok) {
      // Inert bytes: whatever the file is (HTML, SVG), it never renders as a page of this origin.
      link.href = URL.createObjectURL(new Blob([await r.arrayBuffer()], {type: "application/octet-stream"}));
      link.download = name;
      link.classList.remove("hidden");
    }
  } catch (e) { /* the original is only kept for uploaded files */ }
}

// Deep mode: how the question was split, and what each part found (or did not).
function planPanel(end) {
  const panel = document.createElement("details");
  panel.className = "plan";
  const parts = end.sub_questions.map((s) => {
    const state = s.sufficient ? t("found") : t("notFound");
    const clash = s.consistent === false
      ? ` <span class="warning">${esc(t("disagree"))}${s.conflicts.length ? `: ${esc(s.conflicts.join("; "))}` : ""}</span>` : "";
    return `<li class="${s.sufficient ? "found" : "missing"}">${esc(s.question)} <span class="muted">(${esc(state)})</span>${clash}</li>`;
  }).join("");
  panel.innerHTML = `<summary>${esc(t("plan"))} · ${esc(end.kind)} · ${end.rounds} ${esc(t("rounds"))}</summary><ol>${parts}</ol>`;
  return panel;
}

function renderAnswer(box, end, kb) {
  const cites = Object.fromEntries(end.citations.map((c) => [c.n, c]));
  const html = esc(end.answer).replace(/\[(\d+)\]/g, (m, n) => cites[n] ? `<button class="cite" data-n="${n}">[${n}]</button>` : m);
  box.querySelector(".text").innerHTML = html;
  box.querySelectorAll(".cite").forEach((b) => b.addEventListener("click", () => openPassage(cites[b.dataset.n], kb)));
  const meta = box.querySelector(".meta");
  const conf = `${t("confidence")} ${(end.answer_confidence * 100).toFixed(0)}%`;
  meta.innerHTML = "";
  if (end.refused) meta.insertAdjacentHTML("beforeend", `<span class="badge refused">${esc(t("refused"))}</span>`);
  else meta.insertAdjacentHTML("beforeend", `<span class="badge">${esc(conf)}</span>`);
  if (end.route) meta.insertAdjacentHTML("beforeend", `<span class="badge route" data-route="${esc(end.route)}">${esc(t("route"))}: ${esc(routeName(end.route))}</span>`);
  if (end.profile && end.profile.name) meta.insertAdjacentHTML("beforeend", `<span class="badge profile" title="${esc(end.profile.reason || "")}">${esc(t("profile"))}: ${esc(end.profile.name)}</span>`);
  if (end.low_confidence) meta.insertAdjacentHTML("beforeend", `<span class="warning">${esc(t("lowConfidence"))}</span>`);
  if (end.mode === "deep" && end.sub_questions.length > 1) box.appendChild(planPanel(end));
  const list = document.createElement("ol");
  list.className = "sources";
  end.citations.forEach((c) => {
    const li = document.createElement("li");
    li.value = c.n;
    li.innerHTML = `<a href="#" data-n="${c.n}">${esc(where(c))}</a>`;
    li.querySelector("a").addEventListener("click", (ev) => { ev.preventDefault(); openPassage(c, kb); });
    list.appendChild(li);
  });
  box.appendChild(list);
  const fb = document.createElement("div");
  fb.className = "feedback";
  fb.innerHTML = `<button class="up" title="${esc(t("helpful"))}">👍</button><button class="down" title="${esc(t("notHelpful"))}">👎</button>
    <span class="muted">${esc(t("trace"))} ${esc(end.trace_id)}</span>`;
  const send = async (rating) => {
    const note = rating < 0 ? (prompt(t("noteprompt")) || "") : "";
    try {
      await api("/api/feedback", {method: "POST", body: JSON.stringify({trace_id: end.trace_id, rating, note})});
      fb.querySelectorAll("button").forEach((b) => { b.disabled = true; });
      toast(t("thanks"));
    } catch (e) { toast(e.message, true); }
  };
  fb.querySelector(".up").addEventListener("click", () => send(1));
  fb.querySelector(".down").addEventListener("click", () => send(-1));
  box.appendChild(fb);
}

async function* sseEvents(response) {
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

async function ask(question) {
  const scenario = $("#chat-scenario").value;
  let kb = $("#chat-kb").value;
  const msgs = $("#messages");
  msgs.insertAdjacentHTML("beforeend", `<div class="msg user">${esc(question)}</div>`);
  const box = document.createElement("div");
  box.className = "msg assistant";
  box.innerHTML = `<div class="text"></div><div class="meta"></div>`;
  msgs.appendChild(box);
  const status = $("#status");
  try {
    const r = await fetch("/api/ask", {method: "POST", headers: headers({"Content-Type": "application/json"}),
      body: JSON.stringify({...(scenario ? {scenario} : {kb}), question, session_id: sessionId,
                            mode: $("#chat-deep").checked ? "deep" : "fast"})});
    if (!r.ok) throw new Error(errorText(await r.json().catch(() => null), r.status));
    let text = "";
    for await (const ev of sseEvents(r)) {
      if (ev.event === "start") { sessionId = ev.data.session_id; kb = ev.data.kb; }
      else if (ev.event === "status") {
        const round = ev.data.round ? `${t("round")} ${ev.data.round} · ` : "";
        status.textContent = `${round}${ev.data.stage}${ev.data.query ? `: ${ev.data.query}` : ""}…`;
      }
      else if (ev.event === "token") { text += ev.data.text; box.querySelector(".text").textContent = text; }
      else if (ev.event === "end") renderAnswer(box, ev.data, kb);
      else if (ev.event === "error") {
        box.classList.add("error");
        box.querySelector(".text").textContent = `${ev.data.message} (${t("trace")} ${ev.data.trace_id})`;
      }
      msgs.scrollTop = msgs.scrollHeight;
    }
  } catch (e) {
    box.classList.add("error");
    box.querySelector(".text").textContent = e.message;
  } finally {
    status.textContent = "";
  }
}

// ---- knowledge bases ---------------------------------------------------------------------------

async function loadKbs() {
  const kbs = await api("/api/kbs");
  for (const sel of document.querySelectorAll("select.kb-picker")) {
    const keep = sel.value;
    sel.innerHTML = kbs.map((k) => `<option>${esc(k.name)}</option>`).join("");
    if (kbs.some((k) => k.name === keep)) sel.value = keep;
  }
  return kbs;
}

async function loadScenarios() {
  const list = await api("/api/scenarios");
  const sel = $("#chat-scenario");
  const keep = sel.value;
  sel.innerHTML = `<option value="" data-i18n="noScenario">${esc(t("noScenario"))}</option>` +
    list.map((s) => `<option value="${esc(s.id)}" title="${esc(s.description)}">${esc(s.name)} (${esc(s.id)})</option>`).join("");
  if (list.some((s) => s.id === keep)) sel.value = keep;
  $("#chat-kb").disabled = Boolean(sel.value);
  return list;
}

function loadPickers() {
  loadKbs().catch((e) => toast(e.message, true));
  loadScenarios().catch((e) => toast(e.message, true));
}

function newChat() {
  sessionId = null;
  $("#messages").innerHTML = "";
  $("#passage").classList.add("hidden");
}

async function loadAdmin() {
  const kb = $("#admin-kb").value;
  if (!kb) return;
  const info = await api(`/api/kbs/${encodeURIComponent(kb)}`);
  kbInfo = info;
  $("#kb-info").textContent = `${info.files} ${t("files").split(" ")[0]} · ${info.chunks} ${t("chunks")} · ` +
    `${info.embedding_model} · ${info.versioned ? `${t("versions")}: ${info.active_version ?? "-"}` : "unversioned"}`;
  const files = await api(`/api/kbs/${encodeURIComponent(kb)}/files`);
  $("#uploads tbody").innerHTML = files.uploads.map((f) =>
    `<tr><td>${esc(f.name)}</td><td>${f.size}</td><td><button class="preview-btn" data-name="${esc(f.name)}">${esc(t("preview"))}</button></td></tr>`).join("");
  document.querySelectorAll(".preview-btn").forEach((b) => b.addEventListener("click", () => preview(kb, b.dataset.name)));
  const v = await api(`/api/kbs/${encodeURIComponent(kb)}/versions`);
  $("#versions tbody").innerHTML = v.versions.map((x) => `<tr class="${x.active ? "active" : ""}"><td>${x.seq}</td><td>${esc(x.status)}</td>
    <td>${x.files_added}/${x.files_changed}/${x.files_removed}/${x.files_reused}</td><td>${x.chunks_embedded}/${x.chunks_reused}</td>
    <td>${x.gate_passed === null ? "-" : x.gate_passed ? "pass" : "FAIL"}</td>
    <td>${x.active || x.status === "failed" ? "" : `<button class="act" data-seq="${x.seq}">${esc(t("activate"))}</button>`}
    <button class="rep" data-seq="${x.seq}">${esc(t("report"))}</button>
    ${x.seq > 1 ? `<button class="dif" data-seq="${x.seq}">${esc(t("diff"))}</button>` : ""}</td></tr>`).join("");
  const show = (obj) => { const el = $("#report"); el.innerHTML = renderValue(obj); el.classList.remove("hidden"); };
  document.querySelectorAll(".act").forEach((b) => b.addEventListener("click", () => {
    const reason = askReason("confirmActivate", b.dataset.seq);
    if (reason !== null) run(() => api(`/api/kbs/${encodeURIComponent(kb)}/versions/${b.dataset.seq}/activate`,
      {method: "POST", body: JSON.stringify({reason})}));
  }));
  document.querySelectorAll(".rep").forEach((b) => b.addEventListener("click", () => run(async () => {
    show(await api(`/api/kbs/${encodeURIComponent(kb)}/versions/${b.dataset.seq}/report`));
  }, false)));
  document.querySelectorAll(".dif").forEach((b) => b.addEventListener("click", () => run(async () => {
    const el = $("#report");
    el.innerHTML = renderDiff(await api(`/api/kbs/${encodeURIComponent(kb)}/diff?base=${b.dataset.seq - 1}&candidate=${b.dataset.seq}`));
    el.classList.remove("hidden");
  }, false)));
  await versionTools(kb, v);
}

async function run(fn, reload = true) {
  try { await fn(); if (reload) await loadAdmin(); } catch (e) { toast(e.message, true); }
}

async function preview(kb, name) {
  const p = await api(`/api/kbs/${encodeURIComponent(kb)}/preview`, {method: "POST", body: JSON.stringify({file: name, limit: 1000})});
  const editable = kbInfo && kbInfo.name === kb && !kbInfo.versioned && p.preview.length === p.chunks;
  const el = $("#preview");
  el.innerHTML = `<h4>${esc(name)}: ${p.chunks} ${esc(t("chunks"))}</h4>` +
    `<p class="muted">${esc(t(editable ? "editHint" : "versionedNoCommit"))}</p>` +
    p.preview.map((c, i) => `<div class="chunk" data-i="${i}"><span class="muted">#${c.chunk_index} ${esc(where({file: name, ...c}))}</span>
      ${editable ? `<label class="drop"><input type="checkbox" class="drop-chunk"> ${esc(t("drop"))}</label>` : ""}
      <pre class="chunk-text"${editable ? ' contenteditable="plaintext-only"' : ""}>${esc(c.text)}</pre></div>`).join("") +
    (editable ? `<button id="commit-chunks">${esc(t("commitChunks"))}</button>` : "");
  el.classList.remove("hidden");
  if (!editable) return;
  $("#commit-chunks").addEventListener("click", () => run(async () => {
    const chunks = [...el.querySelectorAll(".chunk")].filter((d) => !d.querySelector(".drop-chunk").checked).map((d) => {
      const c = p.preview[Number(d.dataset.i)];
      return {text: d.querySelector(".chunk-text").innerText, heading_path: c.heading_path, page: c.page,
        sheet: c.sheet, row: c.row, source_type: c.source_type};
    });
    const r = await api(`/api/kbs/${encodeURIComponent(kb)}/chunks`, {method: "POST", body: JSON.stringify({file: name, chunks})});
    toast(`${r.committed} ${t("committed")}`);
    el.classList.add("hidden");
  }));
}

function upload() {
  const kb = $("#admin-kb").value;
  const files = $("#files").files;
  if (!kb || !files.length) return;
  const form = new FormData();
  for (const f of files) form.append("file", f, f.name);
  const xhr = new XMLHttpRequest();
  const bar = $("#upload-progress");
  bar.classList.remove("hidden");
  bar.value = 0;
  xhr.upload.onprogress = (e) => { if (e.lengthComputable) bar.value = (100 * e.loaded) / e.total; };
  xhr.onload = () => {
    bar.classList.add("hidden");
    if (xhr.status >= 300) {
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch (e) { /* not JSON: the status says it */ }
      toast(errorText(body, xhr.status), true);
    } else { $("#files").value = ""; toast(t("done")); loadAdmin(); }
  };
  xhr.onerror = () => toast("upload failed", true);
  xhr.open("POST", `/api/kbs/${encodeURIComponent(kb)}/files`);
  xhr.setRequestHeader("Authorization", headers().Authorization);
  xhr.send(form);
}

async function build(unversioned) {
  const kb = $("#admin-kb").value;
  const status = $("#build-status");
  const bar = $("#build-progress");
  status.textContent = t("building");
  try {
    let r;
    if (unversioned) {
      r = await api(`/api/kbs/${encodeURIComponent(kb)}/ingest`, {method: "POST", body: "{}"});
    } else {
      const body = {activate: $("#activate").checked, quality_gate: $("#gate").checked};
      const resp = await fetch(`/api/kbs/${encodeURIComponent(kb)}/builds/stream`, {method: "POST",
        headers: headers({"Content-Type": "application/json"}), body: JSON.stringify(body)});
      if (!resp.ok) throw new Error(errorText(await resp.json().catch(() => null), resp.status));
      const total = Math.max(1, $("#uploads tbody").children.length);
      let done = 0;
      bar.value = 0;
      bar.classList.remove("hidden");
      for await (const ev of sseEvents(resp)) {
        if (ev.event === "status" && ev.data.stage === "file") status.textContent = `${t("building")} ${ev.data.file}`;
        if (ev.event === "status" && ev.data.stage === "file_done") bar.value = (100 * ++done) / total;
        if (ev.event === "end") r = ev.data;
        if (ev.event === "error") throw new Error(ev.data.message);
      }
    }
    const el = $("#build-result");
    el.innerHTML = renderValue({version: r.version?.seq, status: r.version?.status, counts: r.counts,
      gate_reasons: r.gate_reasons, files: r.files.map((f) => ({file: f.name, status: f.status, reason: f.error}))});
    el.classList.remove("hidden");
    status.textContent = t("done");
    await loadAdmin();
  } catch (e) { status.textContent = ""; toast(e.message, true); }
  finally { bar.classList.add("hidden"); }
}

// ---- traces ------------------------------------------------------------------------------------

async function loadTraces() {
  const rows = await api("/api/traces?limit=50");
  $("#traces tbody").innerHTML = rows.map((r) => `<tr data-id="${esc(r.id)}"><td>${esc(r.created_at.slice(0, 19).replace("T", " "))}</td>
    <td>${esc(r.kb)}</td><td>${esc(r.question)}</td><td>${esc(r.route ?? "")}</td><td>${esc(r.status)}</td>
    <td>${r.first_token_ms ?? ""}</td><td>${r.total_ms}</td></tr>`).join("");
  document.querySelectorAll("#traces tbody tr").forEach((tr) => tr.addEventListener("click", async () => {
    const tr_ = await api(`/api/traces/${tr.dataset.id}`);
    const stages = tr_.data.stages.map((s) => `<tr><td>${esc(s.stage)}</td><td>${s.at_ms}</td><td>${s.ms ?? ""}</td></tr>`).join("");
    const cache = tr_.data.cache || [];
    const cacheRows = cache.map((c) => `<tr class="${c.hit ? "hit" : "miss"}"><td>${esc(t(c.hit ? "hit" : "miss"))}</td>
      <td><code>${esc(c.key)}</code></td><td>${c.hits}</td></tr>`).join("");
    const el = $("#trace-detail");
    el.innerHTML = `<h4>${esc(tr_.question)} → ${esc(tr_.query)}</h4>
      <p>${esc(t("scenario"))}: ${esc(tr_.data.scenario || "default")} · ${esc(t("route"))}: ${esc(routeName(tr_.route || ""))}
      · ${esc(t("profile"))}: ${esc(tr_.data.profile || "-")}</p>
      <table><tr><th>stage</th><th>at ms</th><th>ms</th></tr>${stages}</table>
      <h4>${esc(t("cache"))}</h4>${cache.length ? `<table class="cache"><tr><th></th><th>${esc(t("key"))}</th><th>${esc(t("results"))}</th></tr>${cacheRows}</table>` : `<p class="muted">${esc(t("noCache"))}</p>`}
      <pre>${esc(JSON.stringify({confidences: tr_.data.confidences, plan: tr_.data.plan, hits: tr_.data.hits, filter: tr_.data.filter, scope: tr_.data.scope}, null, 2))}</pre>`;
    el.classList.remove("hidden");
  }));
}

// ---- wiring ------------------------------------------------------------------------------------

function showTab(name) {
  document.querySelectorAll(".tab").forEach((b) => b.classList.toggle("active", b.dataset.tab === name));
  document.querySelectorAll(".panel").forEach((p) => p.classList.toggle("hidden", p.id !== `tab-${name}`));
  const load = {admin: loadAdmin, traces: loadTraces}[name];
  if (load) load().catch((e) => toast(e.message, true));
}

document.addEventListener("DOMContentLoaded", () => {
  // The key lives in this tab's sessionStorage only (gone when the tab closes, never shared with other
  // tabs); a key an older version kept in localStorage is removed.
  localStorage.removeItem("lore.key");
  $("#key").value = sessionStorage.getItem("lore.key") || "";
  applyLang();
  $("#lang").addEventListener("click", () => { lang = lang === "zh" ? "en" : "zh"; localStorage.setItem("lore.lang", lang); applyLang(); });
  $("#key").addEventListener("change", () => { sessionStorage.setItem("lore.key", $("#key").value.trim()); loadPickers(); });
  document.querySelectorAll(".tab").forEach((b) => b.addEventListener("click", () => showTab(b.dataset.tab)));
  $("#ask-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const q = $("#question").value.trim();
    if (q) { $("#question").value = ""; ask(q); }
  });
  $("#new-chat").addEventListener("click", newChat);
  // A session belongs to one knowledge base: changing what is asked starts a new chat.
  $("#chat-kb").addEventListener("change", newChat);
  $("#chat-scenario").addEventListener("change", () => { $("#chat-kb").disabled = Boolean($("#chat-scenario").value); newChat(); });
  $("#close-passage").addEventListener("click", () => $("#passage").classList.add("hidden"));
  $("#create-kb").addEventListener("submit", (e) => {
    e.preventDefault();
    run(async () => {
      await api("/api/kbs", {method: "POST", body: JSON.stringify({name: $("#new-kb").value.trim()})});
      await loadKbs();
      $("#admin-kb").value = $("#new-kb").value.trim();
      $("#new-kb").value = "";
    });
  });
  $("#admin-kb").addEventListener("change", () => loadAdmin().catch((e) => toast(e.message, true)));
  $("#upload").addEventListener("click", upload);
  $("#build").addEventListener("click", () => build(false));
  $("#ingest").addEventListener("click", () => build(true));
  $("#rollback").addEventListener("click", () => {
    const reason = askReason("confirmRollback");
    if (reason !== null) run(() => api(`/api/kbs/${encodeURIComponent($("#admin-kb").value)}/rollback`,
      {method: "POST", body: JSON.stringify({reason})}));
  });
  $("#refresh-traces").addEventListener("click", () => loadTraces().catch((e) => toast(e.message, true)));
  if ($("#key").value) loadPickers();
});
