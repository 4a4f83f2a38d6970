// The scenarios tab: a scenario's configuration, its FAQ rows (add, edit, disable) and a routing test.
import {I18N, routeName, t, ui} from "./i18n.js";
import {$, api, esc, fail, guarded, renderValue, toast} from "./common.js";

const faqStatus = (s) => (I18N[ui.lang].faqStatus || {})[s] || s;
let faqState = {revision: "", rows: [], writable: false};
const scPath = () => `/api/scenarios/${encodeURIComponent($("#sc-pick").value)}`;

async function loadScenarioList() {
  const list = await api("/api/scenarios");
  const sel = $("#sc-pick");
  const keep = sel.value;
  sel.innerHTML = list.map((s) => `<option value="${esc(s.id)}">${esc(s.name)} (${esc(s.id)})</option>`).join("");
  if (list.some((s) => s.id === keep)) sel.value = keep;
  if (!sel.value) { $("#sc-config").innerHTML = ""; $("#faq tbody").innerHTML = ""; return; }
  await showScenario();
}

async function showScenario() {
  const c = await api(scPath());
  $("#sc-config").innerHTML = renderValue({
    name: c.name, kb: c.kb, domain: c.domain, description: c.description, assistant_name: c.assistant_name,
    support_contact: c.support_contact, tenants: c.tenants, datasets: c.datasets, defaults: c.defaults,
    access: c.access, sources: c.sources.map((s) => ({...s, patterns: s.patterns.join(", ")})),
    routing: c.routing, risk: c.risk, profiles: Object.keys(c.profiles), variables: c.variables,
  });
  $("#faq-source").innerHTML = `<option value="">general</option>` +
    c.sources.map((s) => `<option value="${esc(s.id)}">${esc(s.id)} ${esc(s.label)}</option>`).join("");
  await loadFaq();
}

async function loadFaq() {
  faqState = await api(`${scPath()}/faq`);
  const w = faqState.writable;
  $("#faq-add").classList.toggle("hidden", !w);
  $("#faq-meta").textContent = [w ? t("faqNextBuild") : t("readOnly"),
    faqState.hidden ? `${faqState.hidden} ${t("faqHidden")}` : ""].filter(Boolean).join(" · ");
  $("#faq tbody").innerHTML = faqState.rows.map((r) => `<tr class="faq-${esc(r.status)}" data-index="${r.index}">
    <td>${r.line}</td><td>${esc(r.question)}</td><td class="faq-answer">${esc(r.answer)}</td><td>${esc(r.source)}</td>
    <td>${esc(r.dataset)}</td><td>${esc(r.visibility)}</td><td>${esc(r.roles.join(", "))}</td>
    <td><span class="faq-status">${esc(faqStatus(r.status))}</span>${r.reason && r.status !== "disabled" ? `<div class="reason">${esc(r.reason)}</div>` : ""}</td>
    <td>${w ? `<button class="faq-edit">${esc(t("edit"))}</button>
      <button class="faq-toggle">${esc(t(r.disabled ? "enable" : "disable"))}</button>` : ""}</td></tr>`).join("");
  document.querySelectorAll("#faq .faq-edit").forEach((b) => b.addEventListener("click", () =>
    editFaq(faqState.rows.find((r) => String(r.index) === b.closest("tr").dataset.index))));
  document.querySelectorAll("#faq .faq-toggle").forEach((b) => b.addEventListener("click", () => {
    const row = faqState.rows.find((r) => String(r.index) === b.closest("tr").dataset.index);
    saveFaq(row.index, {disabled: !row.disabled}).catch(fail);
  }));
}

function editFaq(row) {
  const f = $("#faq-form");
  f.dataset.index = row ? String(row.index) : "";
  $("#faq-q").value = row ? row.question : "";
  $("#faq-a").value = row ? row.answer : "";
  $("#faq-source").value = row && row.source !== "general" ? row.source : "";
  $("#faq-dataset").value = row ? row.dataset : "";
  $("#faq-vis").value = row ? row.visibility : "";
  $("#faq-roles").value = row ? row.roles.join(", ") : "";
  f.classList.remove("hidden");
  $("#faq-q").focus();
}

async function saveFaq(index, fields) {
  const body = {revision: faqState.revision, ...fields};
  const r = index === null
    ? await api(`${scPath()}/faq`, {method: "POST", body: JSON.stringify(body)})
    : await api(`${scPath()}/faq/${index}`, {method: "PUT", body: JSON.stringify(body)});
  toast(`${t("line")} ${r.line}: ${faqStatus(r.status)}${r.status === "ok" || r.status === "disabled" ? "" : ` · ${r.reason}`}`, r.status === "conflict" || r.status === "duplicate");
  $("#faq-form").classList.add("hidden");
  await loadFaq();
}

function submitFaq() {
  const f = $("#faq-form");
  const fields = {question: $("#faq-q").value.trim(), answer: $("#faq-a").value.trim(), source: $("#faq-source").value,
    dataset: $("#faq-dataset").value.trim(), visibility: $("#faq-vis").value,
    roles: $("#faq-roles").value.split(",").map((s) => s.trim()).filter(Boolean)};
  return saveFaq(f.dataset.index === "" ? null : Number(f.dataset.index), fields);
}

async function routeTest() {
  const question = $("#sc-question").value.trim();
  if (!question) return;
  const r = await api(`${scPath()}/route`, {method: "POST", body: JSON.stringify({question})});
  const el = $("#sc-route");
  el.innerHTML = `<p><span class="badge route" data-route="${esc(r.route.name)}">${esc(t("route"))}: ${esc(routeName(r.route.name))}</span>
    <span class="badge profile">${esc(t("profile"))}: ${esc(r.profile.name)}</span> <span class="muted">${esc(r.profile.reason)}</span></p>` +
    renderValue({[t("route")]: r.route, [t("intent")]: r.intent, [t("source_")]: r.source, [t("plan_")]: r.plan,
      notice: r.profile.notice});
  el.classList.remove("hidden");
}

export const loadScenariosPanel = guarded("tab-scenarios", loadScenarioList);

export function initScenarios() {
  $("#sc-pick").addEventListener("change", guarded("tab-scenarios", showScenario));
  $("#sc-route-form").addEventListener("submit", (e) => { e.preventDefault(); guarded("tab-scenarios", routeTest)(); });
  $("#faq-add").addEventListener("click", () => editFaq(null));
  $("#faq-cancel").addEventListener("click", () => $("#faq-form").classList.add("hidden"));
  $("#faq-form").addEventListener("submit", (e) => { e.preventDefault(); submitFaq().catch(fail); });
}
