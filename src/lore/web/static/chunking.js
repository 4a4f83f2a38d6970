// The admin tab's "Chunking" section: the knowledge base's own chunk sizes and strategy (used by its next
// build) and a preview of the chunks an upload or pasted text makes with the form's settings (nothing built).
import {t} from "./i18n.js";
import {$, api, busy, esc, fail, toast, when} from "./common.js";

const url = (kb) => `/api/kbs/${encodeURIComponent(kb)}/chunking`;
const sizes = () => ({child_size: Number($("#ck-child").value), child_overlap: Number($("#ck-overlap").value),
  parent_size: Number($("#ck-parent").value), strategy: $("#ck-strategy").value});
const strategyName = (s) => (s === "semantic" ? t("ckSemanticShort") : t("ckStructureShort"));

function showSettings(s) {
  $("#ck-child").value = s.child_size;
  $("#ck-overlap").value = s.child_overlap;
  $("#ck-parent").value = s.parent_size;
  $("#ck-strategy").value = s.strategy;
  const d = s.defaults;
  $("#ck-state").textContent = s.own
    ? t("ckOwn").replace("{who}", s.updated_by || "").replace("{at}", s.updated_at ? when(s.updated_at) : "")
    : t("ckDefaults").replace("{sizes}", `${d.child_size} / ${d.child_overlap} / ${d.parent_size}`)
      .replace("{strategy}", strategyName(d.strategy));
}

// The KB's settings and its uploads as the preview's choices (an admin who may not build it sees nothing).
async function loadChunking() {
  const kb = $("#admin-kb").value;
  const box = $("#chunking-box");
  if (!kb || box.classList.contains("hidden")) return;
  showSettings(await api(url(kb)));
  const files = await api(`/api/kbs/${encodeURIComponent(kb)}/files`);
  const keep = $("#ck-file").value;
  $("#ck-file").innerHTML = `<option value="">${esc(t("ckPasted"))}</option>` +
    files.uploads.map((f) => `<option value="${esc(f.name)}">${esc(f.name)}</option>`).join("");
  if (files.uploads.some((f) => f.name === keep)) $("#ck-file").value = keep;
  $("#ck-list").innerHTML = "";
  $("#ck-summary").textContent = "";
}

async function save(reset) {
  const kb = $("#admin-kb").value;
  const s = await api(url(kb), {method: "PUT", body: JSON.stringify(reset ? {reset: true} : sizes())});
  showSettings(s);
  toast(t("ckSaved"));
}

async function preview() {
  const kb = $("#admin-kb").value;
  const file = $("#ck-file").value;
  const text = $("#ck-text").value;
  if (!file && !text.trim()) throw new Error(t("ckNeedSource"));
  const body = {...sizes(), ...(file ? {file} : {text, name: "pasted.md"})};
  const r = await api(`${url(kb)}/preview`, {method: "POST", body: JSON.stringify(body)});
  $("#ck-summary").textContent = t("ckSummary").replace("{strategy}", strategyName(r.strategy))
    .replace("{n}", r.chunks).replace("{p}", r.parents).replace("{shown}", r.preview.length);
  $("#ck-list").innerHTML = r.preview.map((c) => `<li class="ck-chunk">
    <div class="ck-meta"><strong>#${c.index + 1}</strong> · ${c.length} ${esc(t("ckUnits"))} · ${esc(t("ckParent"))} ${c.parent + 1}${c.page ? ` · ${esc(t("page"))} ${c.page}` : ""}
    ${c.heading_path.length ? `<div class="ck-path">${esc(c.heading_path.join(" › "))}</div>` : ""}</div>
    <pre class="ck-text">${esc(c.text)}</pre></li>`).join("");
}

export function initChunking() {
  const load = () => loadChunking().catch(fail);
  $("#admin-kb").addEventListener("change", load);
  document.querySelector("button[data-tab=admin]").addEventListener("click", load);
  $("#chunking-form").addEventListener("submit", (e) => { e.preventDefault(); busy($("#ck-save"), () => save(false)).catch(fail); });
  $("#ck-reset").addEventListener("click", () => busy($("#ck-reset"), () => save(true)).catch(fail));
  $("#ck-preview").addEventListener("click", () => busy($("#ck-preview"), preview).catch(fail));
}
