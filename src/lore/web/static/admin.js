// The knowledge-base admin tab: uploads and their chunk preview (committed on an unversioned KB), builds
// and ingests with progress, web crawls (crawls.js), the versions with their reports, activation and rollback.
import {t} from "./i18n.js";
import {$, api, busy, errorText, esc, fail, fetchOk, headers, loadKbs, renderValue, sseEvents, toast, where} from "./common.js";
import {askReason, compareVersions, diffable, renderDiff, versionTools} from "./versions.js";
import {renderReport} from "./report.js";
import {cancelCrawl, crawl, showCrawl} from "./crawls.js";
import {buildingText, endJob, fileState, follow, jobEvent, onProgress, resume, runningJob, startJob, stateHtml} from "./progress.js";

let kbInfo = null;  // the admin tab's knowledge base (versioned or not decides if chunks can be committed)
let files = {uploads: [], indexed: []};  // its uploads and catalogued files, each upload shown with its state
const kbUrl = (kb) => `/api/kbs/${encodeURIComponent(kb)}`;

// Reloads the tab; calls while a reload runs share it and get one more reload after it (not one each).
let loading = null, again = false;
export function loadAdmin() {
  if (loading) { again = true; return loading; }
  loading = (async () => { do { again = false; await reloadAdmin(); } while (again); })().finally(() => { loading = null; });
  return loading;
}

async function reloadAdmin() {
  const kb = $("#admin-kb").value;
  if (!kb) return;
  const info = await api(kbUrl(kb));
  kbInfo = info;
  $("#kb-info").textContent = `${info.files} ${t("files").split(" ")[0]} · ${info.chunks} ${t("chunks")} · ` +
    `${info.embedding_model} · ${info.versioned ? `${t("versions")}: ${info.active_version ?? "-"}` : "unversioned"}`;
  showCrawl(kb, info.versioned);
  files = await api(`${kbUrl(kb)}/files`);
  renderUploads(kb);
  resume(kb);
  const v = await api(`${kbUrl(kb)}/versions`);
  const seqs = diffable(v);
  const before = (seq) => seqs.filter((s) => s < seq).at(-1);  // the diffable version a row is compared with
  $("#versions tbody").innerHTML = v.versions.map((x) => `<tr class="${x.active ? "active" : ""}"><td>${x.seq}</td><td>${esc(x.status)}</td>
    <td>${x.files_added}/${x.files_changed}/${x.files_removed}/${x.files_reused}</td><td>${x.chunks_embedded}/${x.chunks_reused}</td>
    <td>${x.gate_passed === null ? "-" : x.gate_passed ? "pass" : "FAIL"}</td>
    <td>${x.active || x.status === "failed" ? "" : `<button class="act" data-seq="${x.seq}">${esc(t("activate"))}</button>`}
    <button class="rep" data-seq="${x.seq}">${esc(t("report"))}</button>
    ${x.status !== "failed" && before(x.seq) ? `<button class="dif" data-base="${before(x.seq)}" data-seq="${x.seq}">${esc(t("diff"))}</button>` : ""}</td></tr>`).join("");
  const show = (html) => { const el = $("#report"); el.innerHTML = html; el.classList.remove("hidden"); };
  document.querySelectorAll(".act").forEach((b) => b.addEventListener("click", () => {
    const reason = askReason("confirmActivate", b.dataset.seq);
    if (reason !== null) run(() => api(`${kbUrl(kb)}/versions/${b.dataset.seq}/activate`, {method: "POST", body: JSON.stringify({reason})}), true, b);
  }));
  document.querySelectorAll(".rep").forEach((b) => b.addEventListener("click", () => run(async () => {
    show(renderReport(await api(`${kbUrl(kb)}/versions/${b.dataset.seq}/report`), kb, b.dataset.seq));
  }, false, b)));
  document.querySelectorAll(".dif").forEach((b) => b.addEventListener("click", () => run(async () => {
    show(renderDiff(await api(`${kbUrl(kb)}/diff?base=${b.dataset.base}&candidate=${b.dataset.seq}`)));
  }, false, b)));
  await versionTools(kb, v);
}

// The uploads with each one's state (a re-uploaded file of another size waits for the next build).
function renderUploads(kb) {
  const indexed = Object.fromEntries(files.indexed.map((f) => [f.path, f]));
  $("#uploads tbody").innerHTML = files.uploads.map((f) => {
    const rec = indexed[f.name];
    const state = fileState(kb, f.name, rec && {status: rec.status, reason: rec.error, chunks: rec.chunks}, rec && rec.size !== f.size);
    return `<tr><td>${esc(f.name)}</td><td>${f.size}</td><td>${stateHtml(state, kb, f.name)}</td>
      <td><button class="preview-btn" data-name="${esc(f.name)}">${esc(t("preview"))}</button>
      ${kbInfo?.versioned && rec ? `<button class="reparse" data-name="${esc(f.name)}">${esc(t("reparse"))}</button>` : ""}
      <button class="delete-file" data-name="${esc(f.name)}">${esc(t("deleteFile"))}</button></td></tr>`;
  }).join("");
  document.querySelectorAll(".preview-btn").forEach((b) => b.addEventListener("click", () => busy(b, () => preview(kb, b.dataset.name)).catch(fail)));
  document.querySelectorAll(".delete-file").forEach((b) => b.addEventListener("click", () => deleteFile(kb, b.dataset.name)));
  document.querySelectorAll(".reparse").forEach((b) => b.addEventListener("click", () => reparse(kb, b.dataset.name, b)));
}

// Parse and embed one document again as a new version (the KB's other files are carried over as they are).
function reparse(kb, name, button) {
  if (!confirm(t("confirmReparse").replace("{file}", name))) return;
  run(async () => {
    const body = {files: [name], mode: "add", force: true, activate: $("#activate").checked,
      description: `re-parse ${name}`.slice(0, 200)};
    const r = await api(`${kbUrl(kb)}/builds`, {method: "POST", body: JSON.stringify(body)});
    toast(t("reparseQueued"));
    const last = await follow(kb, r.job.id);
    if (last?.event === "error") toast(last.data.cancelled_by ? t("cancelled") : last.data.message, !last.data.cancelled_by);
    else $("#build-status").textContent = t("done");
  }, true, button);
}

// An admin action (its button, if given, disabled meanwhile): its failure as a toast, and (unless told not to)
// the tab reloaded after it.
async function run(fn, reload = true, button = null) {
  try { await busy(button, async () => { await fn(); if (reload) await loadAdmin(); }); } catch (e) { fail(e); }
}

// Delete one upload (confirmed): in a versioned KB the next build drops the file, which the toast says.
function deleteFile(kb, name) {
  if (!confirm(t("confirmDeleteFile").replace("{file}", name))) return;
  run(async () => {
    const r = await api(`${kbUrl(kb)}/files/${encodeURIComponent(name)}`, {method: "DELETE"});
    toast(r.note ? t("deletedNextBuild") : t("deleted"));
  });
}

async function preview(kb, name) {
  const p = await api(`${kbUrl(kb)}/preview`, {method: "POST", body: JSON.stringify({file: name, limit: 1000})});
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
    const r = await api(`${kbUrl(kb)}/chunks`, {method: "POST", body: JSON.stringify({file: name, chunks})});
    toast(`${r.committed} ${t("committed")}`);
    el.classList.add("hidden");
  }));
}

// Upload the chosen files with a progress bar (XMLHttpRequest: fetch reports no upload progress).
function upload() {
  const kb = $("#admin-kb").value;
  const chosen = $("#files").files;
  if (!kb || !chosen.length) return Promise.resolve();
  const form = new FormData();
  for (const f of chosen) form.append("file", f, f.name);
  const xhr = new XMLHttpRequest();
  const bar = $("#upload-progress");
  bar.classList.remove("hidden");
  bar.value = 0;
  xhr.upload.onprogress = (e) => { if (e.lengthComputable) bar.value = (100 * e.loaded) / e.total; };
  return new Promise((resolve) => {
    xhr.onload = () => {
      bar.classList.add("hidden");
      if (xhr.status >= 300) {
        let body = null;
        try { body = JSON.parse(xhr.responseText); } catch (e) { /* not JSON: the status says it */ }
        toast(errorText(body, xhr.status), true);
        resolve();
      } else { $("#files").value = ""; toast(t("done")); loadAdmin().catch(fail).finally(resolve); }
    };
    xhr.onerror = () => { bar.classList.add("hidden"); toast(t("uploadFailed"), true); resolve(); };
    xhr.open("POST", `${kbUrl(kb)}/files`);
    xhr.setRequestHeader("Authorization", headers().Authorization);
    xhr.send(form);
  });
}

async function build(unversioned) {
  const kb = $("#admin-kb").value;
  const status = $("#build-status");
  const bar = $("#build-progress");
  status.textContent = t("building");
  let started = false, cancelled = false;
  try {
    let r;
    if (unversioned) {
      startJob(kb, null, "parsing");  // one request: its files are in work until its report comes back
      started = true;
      r = await api(`${kbUrl(kb)}/ingest`, {method: "POST", body: "{}"});
      endJob(kb, r);
    } else {
      const body = {activate: $("#activate").checked, quality_gate: $("#gate").checked};
      const resp = await fetchOk(`${kbUrl(kb)}/builds/stream`, {method: "POST",
        headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
      startJob(kb, resp.headers.get("X-Lore-Job"));
      started = true;
      const total = Math.max(1, $("#uploads tbody").children.length);
      let done = 0;
      bar.value = 0;
      bar.classList.remove("hidden");
      for await (const ev of sseEvents(resp)) {
        jobEvent(kb, ev);
        if (ev.event === "status" && ["reading", "file", "embedded", "file_done"].includes(ev.data.stage)) status.textContent = buildingText(kb);
        if (ev.event === "status" && ev.data.stage === "file_done") bar.value = (100 * ++done) / total;
        if (ev.event === "end") r = ev.data;
        if (ev.event === "error" && ev.data.cancelled_by) cancelled = true;
        else if (ev.event === "error") throw new Error(ev.data.message);
      }
    }
    const el = $("#build-result");
    if (cancelled) { status.textContent = t("cancelled"); toast(t("cancelled")); await loadAdmin(); return; }
    el.innerHTML = renderValue({version: r.version?.seq, status: r.version?.status, counts: r.counts,
      gate_reasons: r.gate_reasons, removed: r.removed, files: r.files.map((f) => ({file: f.name, status: f.status, reason: f.error}))});
    el.classList.remove("hidden");
    status.textContent = t("done");
    await loadAdmin();
  } catch (e) { status.textContent = ""; fail(e); }
  finally { if (started) endJob(kb); bar.classList.add("hidden"); }
}

export function initAdmin() {
  $("#create-kb").addEventListener("submit", (e) => {
    e.preventDefault();
    run(async () => {
      await api("/api/kbs", {method: "POST", body: JSON.stringify({name: $("#new-kb").value.trim()})});
      await loadKbs();
      $("#admin-kb").value = $("#new-kb").value.trim();
      $("#new-kb").value = "";
    }, true, $("#create-kb button"));
  });
  $("#admin-kb").addEventListener("change", () => loadAdmin().catch(fail));
  $("#upload").addEventListener("click", () => busy($("#upload"), upload));
  // One build or ingest at a time: both buttons wait for the one running.
  $("#build").addEventListener("click", () => busy([$("#build"), $("#ingest")], () => build(false)));
  $("#ingest").addEventListener("click", () => busy([$("#build"), $("#ingest")], () => build(true)));
  // A job this tab follows (a build resumed after a reload too): its end refreshes versions and diff pickers.
  onProgress((kb, ended) => {
    if (kb !== $("#admin-kb").value) return;
    renderUploads(kb);
    showCancel(kb);
    if (ended) loadAdmin().catch(fail);
  });
  $("#cancel-build").addEventListener("click", cancelBuild);
  $("#crawl-form").addEventListener("submit", (e) => { e.preventDefault(); busy($("#crawl"), () => crawl(loadAdmin)).catch(fail); });
  $("#cancel-crawl").addEventListener("click", cancelCrawl);
  $("#rollback").addEventListener("click", () => {
    const reason = askReason("confirmRollback");
    if (reason !== null) run(() => api(`${kbUrl($("#admin-kb").value)}/rollback`, {method: "POST", body: JSON.stringify({reason})}), true, $("#rollback"));
  });
  $("#diff-run").addEventListener("click", () => run(compareVersions, true, $("#diff-run")));
  $("#delete-kb").addEventListener("click", deleteKb);
}

// The Cancel button shows while a build of the chosen KB runs (and stays disabled once asked).
function showCancel(kb) {
  const button = $("#cancel-build");
  const id = runningJob(kb);
  button.classList.toggle("hidden", !id);
  if (!id || button.dataset.job !== id) { button.disabled = false; button.textContent = t("cancelBuild"); }
  button.dataset.job = id || "";
}

// Cancel the running build, confirmed with a reason (kept in the audit log); it stops before its next file.
async function cancelBuild() {
  const button = $("#cancel-build");
  const kb = $("#admin-kb").value;
  const id = runningJob(kb);
  const reason = id ? askReason("confirmCancelBuild") : null;
  if (reason === null) return;
  button.disabled = true;
  button.textContent = t("cancelling");
  try {
    await api(`${kbUrl(kb)}/jobs/${encodeURIComponent(id)}/cancel`, {method: "POST", body: JSON.stringify({reason})});
  } catch (e) { button.disabled = false; button.textContent = t("cancelBuild"); fail(e); }
}

// Delete the chosen knowledge base, confirmed with a reason (kept in the audit log).
function deleteKb() {
  const kb = $("#admin-kb").value;
  const reason = kb ? askReason("confirmDeleteKb", kb) : null;
  if (reason === null) return;
  run(async () => {
    await api(`${kbUrl(kb)}?reason=${encodeURIComponent(reason)}`, {method: "DELETE"});
    toast(t("kbDeleted"));
    await loadKbs();
  }, true, $("#delete-kb"));
}
