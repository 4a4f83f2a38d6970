// The console's feedback review and its export as an eval set, and the API keys (the retrieval test is in
// retrieval.js).
import {t} from "./i18n.js";
import {$, ICONS, api, busy, esc, fail, fetchOk, guarded, may, session, toast, when, where} from "./common.js";
import {faqCell, initFeedbackFaq, wireFaq} from "./feedback.js";

// ---- feedback ----------------------------------------------------------------------------------

async function loadFeedback() {
  const rating = $("#fb-rating").value;
  const rows = await api(`/api/feedback${rating ? `?rating=${rating}` : ""}`);
  $("#fb tbody").innerHTML = rows.map((f) => `<tr><td>${esc(when(f.created_at))}</td>
    <td>${esc(f.kb)}</td><td title="${esc(t(f.rating > 0 ? "helpful" : "notHelpful"))}">${f.rating > 0 ? ICONS.up : ICONS.down}</td><td>${esc(f.question)}</td>
    <td>${f.redacted ? `<span class="warning">${esc(t("redacted"))}</span>` : esc(f.answer)}</td>
    <td>${f.citations.map((c) => `<div class="muted">[${c.n}] ${esc(where(c))}</div>`).join("")}</td><td>${esc(f.note)}</td><td>${faqCell(f)}</td></tr>`).join("");
  wireFaq(rows, loadFeedbackPanel);
}

async function exportFeedback() {
  const r = await fetchOk("/api/feedback/export");
  const a = document.createElement("a");
  a.href = URL.createObjectURL(await r.blob());
  a.download = "badcases.jsonl";
  a.click();
}

// ---- keys --------------------------------------------------------------------------------------

// The roles the server knows, as the create form's only choices (kept when the list is the same).
function fillRoles() {
  const sel = $("#key-roles");
  const roles = session.me?.key_roles || [];
  if ([...sel.options].map((o) => o.value).join() === roles.join()) return;
  sel.innerHTML = roles.map((r) => `<option value="${esc(r)}">${esc(r)}</option>`).join("");
  sel.size = Math.min(Math.max(roles.length, 2), 6);
}

async function loadKeys() {
  $("#key-form").classList.toggle("hidden", !may("manage_keys"));
  fillRoles();
  if (!may("manage_keys")) {  // not asked for: the server would refuse (and the browser log the 403)
    $("#keys tbody").innerHTML = "";
    throw Object.assign(new Error(t("keysNeedAdmin")), {denied: true});
  }
  const rows = await api("/api/keys");
  $("#keys tbody").innerHTML = rows.map((k) => `<tr class="${k.revoked_at ? "revoked" : ""}"><td><code>${esc(k.prefix)}…</code></td>
    <td>${esc(k.name)}</td><td>${esc(k.roles.join(", "))}</td><td>${esc((k.datasets || []).join(", "))}</td>
    <td>${esc(when(k.created_at))}</td><td>${k.expires_at ? esc(when(k.expires_at, 16)) +
      (new Date(k.expires_at) <= new Date() ? ` (${esc(t("expired"))})` : "") : esc(t("never"))}</td>
    <td>${k.last_used_at ? esc(when(k.last_used_at, 16)) : "-"}</td>
    <td>${k.revoked_at ? esc(t("revoked")) : `<button class="revoke" data-id="${esc(k.id)}">${esc(t("revoke"))}</button>`}</td></tr>`).join("");
  document.querySelectorAll(".revoke").forEach((b) => b.addEventListener("click", () => {
    if (!confirm(`${t("revoke")} ${b.dataset.id}?`)) return;
    api(`/api/keys/${encodeURIComponent(b.dataset.id)}`, {method: "DELETE"}).then(loadKeys).catch(fail);
  }));
}

async function createKey() {
  const list = (id) => $(id).value.split(",").map((s) => s.trim()).filter(Boolean);
  const body = {roles: [...$("#key-roles").selectedOptions].map((o) => o.value), name: $("#key-name").value.trim()};
  if (list("#key-datasets").length) body.datasets = list("#key-datasets");
  if ($("#key-days").value) body.expires_in_days = Number($("#key-days").value);
  const r = await api("/api/keys", {method: "POST", body: JSON.stringify(body)});
  $("#key-secret").textContent = `${t("newSecret")} ${r.secret}`;
  $("#key-secret").dataset.secret = r.secret;
  $("#key-secret").classList.remove("hidden");
  $("#copy-secret").classList.remove("hidden");
  await loadKeys();
}

export const loadFeedbackPanel = guarded("tab-feedback", loadFeedback);
export const loadKeysPanel = guarded("tab-keys", loadKeys);

export function initConsole() {
  $("#fb-rating").addEventListener("change", loadFeedbackPanel);
  initFeedbackFaq();
  $("#fb-export").addEventListener("click", () => busy($("#fb-export"), exportFeedback).catch(fail));
  $("#key-form").addEventListener("submit", (e) => { e.preventDefault(); busy($("#key-form button"), createKey).catch(fail); });
  $("#copy-secret").addEventListener("click", () => navigator.clipboard.writeText($("#key-secret").dataset.secret)
    .then(() => toast(t("copied"))).catch(fail));
}
