// The retrieval test: one knowledge base's hits for a query under settings of the tester's choosing (mode,
// RRF k, candidates, reranker, a version), each hit's scores explained, the query's terms marked, and whether
// an answer from these hits would be refused at the threshold given.
import {t} from "./i18n.js";
import {$, api, esc, guarded, loadKbs, where} from "./common.js";

let last = null;  // the last search's reply: a new threshold is judged against it without searching again

function highlight(text, terms) {
  const words = [...new Set(terms.filter((w) => w.trim().length > 0))].sort((a, b) => b.length - a.length);
  if (!words.length) return esc(text);
  const re = new RegExp(words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "gi");
  let out = "", at = 0;
  for (const m of text.matchAll(re)) {
    out += esc(text.slice(at, m.index)) + `<mark>${esc(m[0])}</mark>`;
    at = m.index + m[0].length;
  }
  return out + esc(text.slice(at));
}

// The request: only what the tester set is sent, the rest stays as the server is configured.
function request() {
  const num = (id) => ($(id).value === "" ? null : Number($(id).value));
  const body = {kb: $("#rt-kb").value, query: $("#rt-query").value.trim(), mode: $("#rt-mode").value,
    top_k: num("#rt-k") || 10, explain: true};
  for (const [field, id] of [["rrf_k", "#rt-rrf"], ["recall_k", "#rt-recall"], ["rerank_k", "#rt-rerank-k"], ["version", "#rt-version"]]) {
    if (num(id) !== null && !$(id).closest(".hidden")) body[field] = num(id);
  }
  if (!$("#rt-rerank").checked) body.rerank = false;
  return body;
}

const fmt = (x, digits = 4) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));

// One hit's scores, each named and explained (its rank among that retriever's candidates, the fusion's k).
function scores(h, r, k) {
  const rank = (n) => (n ? ` <span class="muted">#${n}</span>` : "");
  const rows = [];
  if (h.dense_score !== null || h.dense_rank) rows.push([t("denseScore"), fmt(h.dense_score) + rank(h.dense_rank)]);
  else if (r.mode === "hybrid") rows.push([t("denseScore"), `<span class="muted">${esc(t("notRetrieved"))}</span>`]);
  if (h.bm25_score !== null) rows.push([t("bm25Score"), fmt(h.bm25_score) + rank(h.bm25_rank)]);
  else if (h.bm25_rank) rows.push([t("bm25Score"), `<span class="muted" title="${esc(t("bm25Hidden"))}">–</span>${rank(h.bm25_rank)}`]);
  else if (r.mode === "hybrid") rows.push([t("bm25Score"), `<span class="muted">${esc(t("notRetrieved"))}</span>`]);
  if (h.fused_score !== null && h.fused_score !== undefined) rows.push([`${t("fusedScore")} <span class="muted">k=${k}</span>`, fmt(h.fused_score)]);
  if (h.rerank_score !== null) rows.push([t("rerankScore"), fmt(h.rerank_score)]);
  return `<dl class="scores">${rows.map(([name, v]) => `<dt>${name}</dt><dd>${v}</dd>`).join("")}</dl>`;
}

// Whether an answer from these hits would be refused at the threshold entered (or the KB's own).
function verdict() {
  const el = $("#rt-verdict");
  const ev = last?.evidence;
  el.classList.toggle("hidden", !ev);
  if (!ev) return;
  const typed = $("#rt-threshold").value;
  const threshold = typed === "" ? ev.threshold : Number(typed);
  $("#rt-threshold").placeholder = `${t("kbThreshold")} ${fmt(ev.threshold, 2)}`;
  const answers = ev.held && ev.confidence >= threshold;
  el.className = `verdict ${answers ? "answers" : "refuses"}`;
  el.innerHTML = `<strong>${esc(t(answers ? "wouldAnswer" : "wouldRefuse"))}</strong> · ${esc(t("pAnswerable"))} ${fmt(ev.confidence, 3)}
    ${ev.confidence >= threshold ? "≥" : "<"} ${esc(t("threshold"))} ${fmt(threshold, 2)}
    ${ev.held ? "" : `<div>${esc(t("notHeld"))}</div>`}<div class="note">${esc(t("firstJudgement"))}</div>`;
}

async function retrievalTest() {
  const body = request();
  if (!body.query) return;
  const r = await api("/api/search", {method: "POST", body: JSON.stringify(body)});
  last = r;
  const k = body.rrf_k || t("asConfigured");
  const rr = r.rerank ? ` · ${t("reranked")} ${r.rerank.provider} (${r.rerank.candidates} ${t("candidatesN")}, ${r.rerank.ms} ms)` : "";
  $("#rt-meta").textContent = `${t("terms")}: ${(r.terms || []).join(" ")} · ${t("applied")}: ${JSON.stringify(r.filter || {})}` +
    `${r.version ? ` · ${t("version")} ${r.version}` : ""}${rr}`;
  $("#rt-hits tbody").innerHTML = r.hits.length ? r.hits.map((h, i) => `<tr><td>${i + 1}</td><td>${scores(h, r, k)}</td>
    <td><div class="muted">${esc(where(h))}</div><div class="hit-text">${highlight(h.text, r.terms || [])}</div></td></tr>`).join("")
    : `<tr><td colspan="3" class="muted">${esc(t("noHits"))}</td></tr>`;
  $("#rt-legend").classList.remove("hidden");
  verdict();
}

export const loadRetrievalPanel = guarded("tab-retrieval", () => loadKbs());

export function initRetrieval() {
  $("#rt-form").addEventListener("submit", (e) => { e.preventDefault(); guarded("tab-retrieval", retrievalTest)(); });
  $("#rt-threshold").addEventListener("input", verdict);
}
