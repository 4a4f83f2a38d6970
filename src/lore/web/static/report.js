// A version's quality report as a readable, printable page: the gate, summary figures, every file's outcome,
// failures with their reasons, and the eval set's results (tables scroll inside their own box).
import {t} from "./i18n.js";
import {esc} from "./common.js";

const shown = (x) => (x === null || x === undefined || x === "" ? "–" : esc(x));
const pct = (x) => (x === null || x === undefined || Number.isNaN(x) ? "–" : (100 * x).toFixed(1) + "%");

// A table in its own scrolling box (its caption names it for screen readers).
function table(caption, cols, rows) {
  if (!rows.length) return `<p class="muted">${esc(t("rpNone"))}</p>`;
  return `<div class="scroll" tabindex="0" role="region" aria-label="${esc(caption)}"><table class="rp-table">
    <thead><tr>${cols.map((c) => `<th scope="col">${esc(c)}</th>`).join("")}</tr></thead>
    <tbody>${rows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join("")}</tr>`).join("")}</tbody></table></div>`;
}

// One group of figures (the numbers of a report section) as labelled tiles.
function figures(title, section, keys) {
  if (!section) return "";
  const tiles = keys.filter(([k]) => section[k] !== undefined).map(([k, label]) =>
    `<div class="rp-fig"><dt>${esc(label)}</dt><dd>${shown(section[k])}</dd></div>`).join("");
  return tiles ? `<section class="rp-group"><h5>${esc(title)}</h5><dl class="rp-figs">${tiles}</dl></section>` : "";
}

function gate(r) {
  if (!r.gate) return `<p class="muted">${esc(t("rpNoGate"))}</p>`;
  const reasons = r.gate.reasons?.length ? `<ul>${r.gate.reasons.map((x) => `<li>${esc(x)}</li>`).join("")}</ul>` : "";
  return `<p class="rp-gate ${r.gate.passed ? "rp-pass" : "rp-fail"}"><strong>${esc(t("gate"))}:</strong> ${esc(t(r.gate.passed ? "rpPassed" : "rpFailed"))}</p>${reasons}`;
}

function evalResults(c) {
  if (!c) return `<p class="muted">${esc(t("rpNoEval"))}</p>`;
  const rows = [["recall", "Recall"], ["mrr", "MRR"], ["ndcg", "nDCG"]].map(([key, label]) =>
    [`${label}@${c.k}`, pct(c.base?.[key]), pct(c.candidate?.[key])]);
  let html = `<p>${c.questions} ${esc(t("questionsN"))}</p>` +
    table(t("rpEval"), [t("metric"), t("rpActive"), t("candidate")], rows);
  for (const [key, label] of [["lost", "lost"], ["gained", "gained"]]) {
    if (c[key]?.length) html += `<h5>${esc(t(label))}</h5><ul>${c[key].map((x) => `<li>${esc(typeof x === "string" ? x : JSON.stringify(x))}</li>`).join("")}</ul>`;
  }
  return html;
}

// The report of version `seq` of `kb` as HTML (the caller puts it in the page).
export function renderReport(r, kb, seq) {
  const files = r.files || {}, chunks = r.chunks || {};
  const perFile = r.per_file || [];
  const failed = r.problems || [];
  let html = `<article class="rp" aria-labelledby="rp-title"><div class="rp-head">
    <h4 id="rp-title">${esc(t("rpTitle"))} — ${esc(kb)} v${esc(seq)}</h4>
    <button type="button" id="rp-print" class="rp-print">${esc(t("rpPrint"))}</button></div>`;
  html += gate(r);
  html += `<h5>${esc(t("rpSummary"))}</h5><div class="rp-summary">` +
    figures(t("rpFiles"), files, [["scanned", t("rpScanned")], ["loaded", t("rpLoaded")], ["reused", t("rpReused")],
      ["kept", t("rpKept")], ["failed", t("rpFailedN")], ["unsupported", t("rpUnsupported")], ["empty", t("rpEmpty")], ["removed", t("rpRemoved")]]) +
    figures(t("chunks"), chunks, [["new", t("rpNew")], ["reused", t("rpReused")], ["too_short", t("rpTooShort")],
      ["too_long", t("rpTooLong")], ["duplicates", t("rpDuplicates")]]) +
    figures("OCR", r.ocr, [["files", t("rpFiles")], ["pages", t("rpPages")], ["unreviewed_pages", t("rpUnreviewed")]]) +
    figures(t("rpTables"), r.tables, [["files", t("rpFiles")], ["rows", t("rpRows")]]) +
    figures("FAQ", r.faq, [["rows", t("rpRows")], ["skipped", t("rpSkipped")], ["conflicts", t("rpConflicts")]]) + `</div>`;
  html += `<h5>${esc(t("rpFailures"))} (${failed.length})</h5>` +
    table(t("rpFailures"), [t("file"), t("status"), t("rpReason")],
      failed.map((p) => [`<span class="rp-file">${esc(p.file)}</span>`, esc(p.status), esc(p.reason)]));
  html += `<h5>${esc(t("rpPerFile"))} (${perFile.length})</h5>` +
    table(t("rpPerFile"), [t("file"), t("status"), t("chunks"), t("rpPages"), t("rpReason")],
      perFile.map((f) => [`<span class="rp-file">${esc(f.file)}</span>`, esc(f.status), shown(f.chunks),
        f.ocr_pages ? esc(f.ocr_pages) : "–", shown(f.reason)]));
  if (r.reindexed?.length) {
    html += `<h5>${esc(t("rpReindexed"))}</h5>` + table(t("rpReindexed"), [t("file"), t("rpReason")],
      r.reindexed.map((x) => [`<span class="rp-file">${esc(x.file)}</span>`, esc(x.why)]));
  }
  if (r.removed_files?.length) html += `<h5>${esc(t("rpRemovedFiles"))}</h5><ul>${r.removed_files.map((x) => `<li>${esc(x)}</li>`).join("")}</ul>`;
  html += `<h5>${esc(t("rpEval"))}</h5>` + evalResults(r.comparison);
  if (r.encoding_repairs?.length) {
    html += `<h5>${esc(t("rpEncoding"))}</h5>` + table(t("rpEncoding"), [t("file"), t("rpEncodingCol")],
      r.encoding_repairs.map((e) => [`<span class="rp-file">${esc(e.file)}</span>`, esc(e.encoding)]));
  }
  return html + `</article>`;
}

// Printing shows the report alone (style.css: body.print-report); the page is back as it was afterwards.
document.addEventListener("click", (e) => {
  if (!e.target.closest?.("#rp-print")) return;
  document.body.classList.add("print-report");
  window.addEventListener("afterprint", () => document.body.classList.remove("print-report"), {once: true});
  window.print();
});
