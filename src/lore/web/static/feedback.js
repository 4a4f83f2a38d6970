// Feedback into FAQ: a rating in the feedback list becomes a FAQ row of a scenario of its knowledge base
// (its question and the answer the admin corrects), and is then shown as handled.
import {t} from "./i18n.js";
import {$, api, busy, esc, fail, toast} from "./common.js";

let current = null;  // the rating the form is open for
let reload = () => {};

// The last cell of a feedback row: what it became, or the button that opens the form.
export function faqCell(f) {
  if (f.handled_at) return `<span class="fb-handled">${esc(t("fbHandled"))}: ${esc(f.handled_as || "")}</span>`;
  return `<button type="button" class="fb-to-faq" data-id="${f.id}">${esc(t("fbToFaq"))}</button>`;
}

async function open(f) {
  const scenarios = (await api("/api/scenarios")).filter((s) => s.kb === f.kb);
  if (!scenarios.length) throw new Error(t("fbNoScenario").replace("{kb}", f.kb));
  current = f;
  $("#fb-faq-scenario").innerHTML = scenarios.map((s) => `<option value="${esc(s.id)}">${esc(s.name)} (${esc(s.id)})</option>`).join("");
  $("#fb-faq-q").value = f.question;
  $("#fb-faq-a").value = f.answer || "";
  $("#fb-faq-for").textContent = `#${f.id} · ${f.kb}`;
  $("#fb-faq").classList.remove("hidden");
  $("#fb-faq-a").focus();
}

function close() {
  current = null;
  $("#fb-faq").classList.add("hidden");
}

async function save() {
  const body = {scenario: $("#fb-faq-scenario").value, question: $("#fb-faq-q").value.trim(), answer: $("#fb-faq-a").value.trim()};
  const r = await api(`/api/feedback/${current.id}/faq`, {method: "POST", body: JSON.stringify(body)});
  close();
  toast(t("fbSaved").replace("{row}", r.faq.index).replace("{scenario}", r.scenario));
  await reload();
}

// After the list is drawn: each row's button opens the form for that rating.
export function wireFaq(rows, onSaved) {
  reload = onSaved;
  const byId = Object.fromEntries(rows.map((f) => [f.id, f]));
  document.querySelectorAll(".fb-to-faq").forEach((b) => b.addEventListener("click", () =>
    busy(b, () => open(byId[b.dataset.id])).catch(fail)));
}

export function initFeedbackFaq() {
  $("#fb-faq").addEventListener("submit", (e) => { e.preventDefault(); busy($("#fb-faq-save"), save).catch(fail); });
  $("#fb-faq-cancel").addEventListener("click", close);
}
