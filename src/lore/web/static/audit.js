// The audit tab: who (the key's name) did what to which knowledge base, when and why, newest first,
// optionally of one knowledge base.
import {auditName, t} from "./i18n.js";
import {$, api, esc, guarded, when} from "./common.js";

// The key that acted: its name; an unnamed key by its id; the local operator (CLI).
function who(e) {
  if (e.key_id === null) return esc(t("operator"));
  return e.key_name ? esc(e.key_name) : `<span class="muted">${esc(t("unnamed"))} ${esc(e.key_id)}</span>`;
}

function details(detail) {
  return Object.entries(detail).filter(([k]) => k !== "reason")
    .map(([k, v]) => `${esc(k)}: ${esc(typeof v === "object" ? JSON.stringify(v) : v)}`).join(" · ");
}

async function loadAudit() {
  const sel = $("#audit-kb");
  const kbs = await api("/api/kbs");
  const keep = sel.value;
  sel.innerHTML = `<option value="">${esc(t("allKbs"))}</option>` + kbs.map((k) => `<option>${esc(k.name)}</option>`).join("");
  if (kbs.some((k) => k.name === keep)) sel.value = keep;
  const rows = await api(`/api/audit${sel.value ? `?kb=${encodeURIComponent(sel.value)}` : ""}`);
  $("#audit tbody").innerHTML = rows.map((e) => `<tr data-action="${esc(e.action)}"><td>${esc(when(e.at))}</td>
    <td class="who">${who(e)}</td><td>${esc(auditName(e.action))}</td><td>${esc(e.kb ?? "")}</td>
    <td><code>${esc(e.target)}</code></td><td class="reason">${esc(e.detail.reason ?? "")}</td>
    <td class="muted">${details(e.detail)}</td></tr>`).join("")
    || `<tr><td colspan="7" class="muted">${esc(t("noAudit"))}</td></tr>`;
}

export const loadAuditPanel = guarded("tab-audit", loadAudit);

export function initAudit() {
  $("#audit-kb").addEventListener("change", loadAuditPanel);
  $("#refresh-audit").addEventListener("click", loadAuditPanel);
}
